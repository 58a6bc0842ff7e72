"""What a valid BEIR dataset looks like, as great-expectations expectations per file kind.

Each expectation carries a short `description`: it is what failure messages and Data Docs show.
Bounds come from the `validate` section of params.yaml.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from uniret.config.sections import ValidateConfig
from uniret.data.tables import CORPUS, DOC_KNOWN, QRELS, QUERIES, QUERY_KNOWN

if TYPE_CHECKING:
    from great_expectations.expectations import Expectation

# Columns quoted (with the line) for each offending row of a failed expectation.
INDEX_COLUMNS = {
    CORPUS: ["line", "_id"],
    QUERIES: ["line", "_id"],
    QRELS: ["line", "query-id", "corpus-id"],
}


def _text_file(kind: str, what: str, max_chars: int, cfg: ValidateConfig, columns: list[str]) -> list[Expectation]:
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=columns, exact_match=True, description=f"{kind} has columns {columns}"),
        gxe.ExpectTableRowCountToBeBetween(min_value=1, description=f"{kind} is not empty"),
        gxe.ExpectColumnValuesToNotBeNull(column="_id", description=f"every {what} has an _id"),
        gxe.ExpectColumnValuesToBeUnique(column="_id", description=f"{what} ids are unique"),
        gxe.ExpectColumnValuesToBeOfType(column="text", type_="str", description=f"{what} text is a string"),
        gxe.ExpectColumnValuesToBeBetween(
            column="text_chars",
            min_value=cfg.min_text_chars,
            description=f"{what} text is not empty (at least {cfg.min_text_chars} chars after strip)",
        ),
        gxe.ExpectColumnValueLengthsToBeBetween(
            column="text", max_value=max_chars, description=f"{what} text is at most {max_chars} chars"
        ),
    ]


def corpus_expectations(cfg: ValidateConfig) -> list[Expectation]:
    """corpus.jsonl: schema, unique non-null ids, non-empty text within length bounds."""
    import great_expectations.expectations as gxe

    columns = ["line", "_id", "title", "text", "text_chars"]
    return _text_file("corpus", "document", cfg.max_doc_chars, cfg, columns) + [
        gxe.ExpectColumnValuesToBeOfType(column="title", type_="str", description="document title is a string"),
    ]


def queries_expectations(cfg: ValidateConfig) -> list[Expectation]:
    """queries.jsonl: schema, unique non-null ids, non-empty text within length bounds."""
    return _text_file("queries", "query", cfg.max_query_chars, cfg, ["line", "_id", "text", "text_chars"])


def qrels_expectations(cfg: ValidateConfig, linked_queries: bool, linked_corpus: bool) -> list[Expectation]:
    """qrels/<split>.tsv: schema, unique pairs, score domain and referential integrity.

    The integrity checks run only when queries.jsonl / corpus.jsonl passed the structural pass
    (their ids are needed); otherwise that file's own problem is already reported.
    """
    import great_expectations.expectations as gxe

    columns = ["line", "query-id", "corpus-id", "score"]
    columns += [QUERY_KNOWN] if linked_queries else []
    columns += [DOC_KNOWN] if linked_corpus else []
    out = [
        gxe.ExpectTableColumnsToMatchSet(column_set=columns, exact_match=True, description=f"qrels has columns {columns}"),
        gxe.ExpectTableRowCountToBeBetween(min_value=1, description="qrels is not empty"),
        gxe.ExpectColumnValuesToBeOfType(column="score", type_="int64", description="score is an integer"),
        gxe.ExpectColumnValuesToBeBetween(
            column="score",
            min_value=cfg.min_score,
            max_value=cfg.max_score,
            description=f"score is in [{cfg.min_score}, {cfg.max_score}]"
            + (" (0: judged not relevant)" if cfg.min_score <= 0 else ""),
        ),
        # scores of 0 are judgments of non-relevance (trec_eval and every metric here count >= 1 as
        # relevant): a file of zeros alone has nothing to train or evaluate on
        gxe.ExpectColumnMaxToBeBetween(
            column="score", min_value=1, description="at least one pair is judged relevant (score >= 1)",
        ),
        gxe.ExpectCompoundColumnsToBeUnique(
            column_list=["query-id", "corpus-id"], description="each (query-id, corpus-id) pair is judged once"
        ),
    ]
    if linked_queries:
        out.append(
            gxe.ExpectColumnValuesToBeInSet(
                column=QUERY_KNOWN, value_set=[True], description="every qrels query-id is in queries.jsonl"
            )
        )
    if linked_corpus:
        out.append(
            gxe.ExpectColumnValuesToBeInSet(
                column=DOC_KNOWN, value_set=[True], description="every qrels corpus-id is in corpus.jsonl"
            )
        )
    return out
