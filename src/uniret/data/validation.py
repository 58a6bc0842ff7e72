"""Validate BEIR datasets: a structural pass, then great-expectations suites per file.

`validate_dataset` reads one dataset with the strict readers (data/tables.py), runs the
expectations of data/expectations.py on every file that loaded, and returns a DatasetReport
holding every result and every problem, so one run names all failures across all datasets.
GX runs in an ephemeral context (suites and results in memory); `GxSession.build_docs` renders
Data Docs into a folder of our choosing instead of GX's random temp site.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from uniret.config.sections import ValidateConfig
from uniret.core.errors import DataProblem
from uniret.data.drift import DriftCheck
from uniret.data.expectations import (
    INDEX_COLUMNS,
    corpus_expectations,
    qrels_expectations,
    queries_expectations,
)
from uniret.data.tables import CORPUS, DOC_KNOWN, QUERIES, QUERY_KNOWN, DatasetTables, FileTable
from uniret.utils.text import excerpt

log = logging.getLogger("uniret.data")

DOCS_SITE = "uniret_data_docs"


@dataclass
class CheckResult:
    """The outcome of one expectation on one file."""

    dataset: str
    file: str  # path inside the dataset folder
    path: str  # full path, for messages
    expectation: str  # GX expectation type
    description: str
    success: bool
    column: str | None = None
    element_count: int | None = None
    unexpected_count: int | None = None
    observed: Any = None
    examples: list[str] = field(default_factory=list)

    def message(self) -> str:
        target = f" on {self.column}" if self.column else ""
        text = f"{self.dataset}: {self.path}: expectation failed: {self.description} ({self.expectation}{target})"
        if self.unexpected_count is not None:
            text += f": {self.unexpected_count} of {self.element_count} rows"
        elif self.observed is not None:
            text += f": observed {self.observed}"
        if self.examples:
            text += "; e.g. " + "; ".join(self.examples)
        return text


@dataclass
class DatasetReport:
    """Everything validation found about one dataset."""

    name: str
    root: Path
    structural: list[DataProblem] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    drift: list[DriftCheck] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.structural and all(c.success for c in self.checks)

    def problems(self, include_drift: bool) -> list[str]:
        """One line per problem, each naming the dataset and the file."""
        out = [f"{self.name}: {p}" for p in self.structural]
        out += [c.message() for c in self.checks if not c.success]
        if include_drift:
            out += [d.message() for d in self.drift if not d.ok]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.name,
            "root": str(self.root),
            "success": self.ok,
            "rows": self.rows,
            "structural_problems": [str(p) for p in self.structural],
            "checks": [asdict(c) for c in self.checks],
            "drift": [asdict(d) for d in self.drift],
        }


def _format_example(row: dict[str, Any], columns: list[str]) -> str:
    """'line 12 (_id=abc)' from a GX unexpected-index row."""
    line = row.get("line")
    # values are record text (a 50 MB document would be quoted whole): each is cut to an excerpt
    rest = ", ".join(f"{k}={excerpt(row[k], quote=False)}" for k in columns if k != "line" and k in row)
    extra = ", ".join(f"{k}={excerpt(v, quote=False)}" for k, v in row.items() if k not in columns)
    detail = ", ".join(x for x in (rest, extra) if x)
    return f"line {line} ({detail})" if line is not None else detail


def _check_result(dataset: str, table: FileTable, result: Any, max_examples: int) -> CheckResult:
    cfg = result.expectation_config
    kwargs = cfg.kwargs
    res = result.result or {}
    columns = INDEX_COLUMNS[table.kind]
    examples: list[str] = []
    if not result.success:
        index_rows = res.get("partial_unexpected_index_list") or []
        if index_rows:
            examples = [_format_example(r, columns) for r in index_rows[:max_examples]]
        else:
            examples = [excerpt(v) for v in (res.get("partial_unexpected_list") or [])[:max_examples]]
    column = kwargs.get("column") or (",".join(kwargs["column_list"]) if kwargs.get("column_list") else None)
    observed = res.get("observed_value")
    return CheckResult(
        dataset=dataset,
        file=table.rel,
        path=str(table.path),
        expectation=cfg.type,
        description=cfg.description or cfg.type,
        success=bool(result.success),
        column=column,
        element_count=res.get("element_count"),
        unexpected_count=res.get("unexpected_count"),
        observed=observed if isinstance(observed, (int, float, type(None))) else excerpt(observed),
        examples=examples,
    )


class GxSession:
    """One ephemeral great-expectations context for a validation run (each file validated once)."""

    def __init__(self) -> None:
        gx_log = logging.getLogger("great_expectations")
        if gx_log.level == logging.NOTSET:  # GX logs hundreds of INFO lines at import; keep ours readable
            gx_log.setLevel(logging.WARNING)
        import great_expectations as gx
        from great_expectations.data_context.types.base import (
            DataContextConfig,
            InMemoryStoreBackendDefaults,
            ProgressBarsConfig,
        )

        self._gx = gx
        # No temp docs site: docs go only where build_docs is told; no progress bars per metric.
        config = DataContextConfig(
            store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
            analytics_enabled=False,
            progress_bars=ProgressBarsConfig(globally=False),
        )
        self.context = gx.get_context(mode="ephemeral", project_config=config)
        self._sources: dict[str, Any] = {}

    def run_suite(self, dataset: str, table: FileTable, expectations: list, max_examples: int) -> list[CheckResult]:
        """Validate one file's DataFrame against `expectations`; one CheckResult per expectation."""
        gx = self._gx
        stem = table.rel.replace("/", "_").replace(".", "_")
        name = f"{dataset}.{stem}"
        source = self._source(dataset)
        batch_def = source.add_dataframe_asset(stem).add_batch_definition_whole_dataframe("whole")
        suite = self.context.suites.add(gx.ExpectationSuite(name=name))
        for exp in expectations:
            suite.add_expectation(exp)
        definition = self.context.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch_def, suite=suite))
        result_format = {
            "result_format": "SUMMARY",
            "unexpected_index_column_names": INDEX_COLUMNS[table.kind],
            "partial_unexpected_count": max_examples,
        }
        outcome = definition.run(batch_parameters={"dataframe": table.frame}, result_format=result_format)
        return [_check_result(dataset, table, r, max_examples) for r in outcome.results]

    def _source(self, dataset: str):
        if dataset not in self._sources:
            self._sources[dataset] = self.context.data_sources.add_pandas(dataset)
        return self._sources[dataset]

    def build_docs(self, site_dir: Path) -> Path:
        """Render Data Docs for every suite and result of this session into `site_dir`."""
        site_dir = Path(site_dir)
        self.context.add_data_docs_site(
            DOCS_SITE,
            {
                "class_name": "SiteBuilder",
                "show_how_to_buttons": False,
                "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(site_dir)},
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            },
        )
        self.context.build_data_docs(site_names=[DOCS_SITE])
        return site_dir / "index.html"


def _expectations_for(table: FileTable, cfg: ValidateConfig) -> list:
    if table.kind == CORPUS:
        return corpus_expectations(cfg)
    if table.kind == QUERIES:
        return queries_expectations(cfg)
    frame = table.frame
    return qrels_expectations(cfg, QUERY_KNOWN in frame.columns, DOC_KNOWN in frame.columns)


def validate_dataset(session: GxSession, tables: DatasetTables, cfg: ValidateConfig) -> DatasetReport:
    """Run the GX suites on every structurally sound file of `tables`; collect all results."""
    report = DatasetReport(name=tables.name, root=tables.root, structural=tables.all_problems)
    for table in tables.files:
        if not table.ok:
            continue
        report.rows[table.rel] = int(len(table.frame))
        report.checks += session.run_suite(tables.name, table, _expectations_for(table, cfg), cfg.max_examples)
    failed = sum(not c.success for c in report.checks)
    log.info(
        "%s: %d structural problem(s), %d/%d expectations passed",
        tables.name, len(report.structural), len(report.checks) - failed, len(report.checks),
    )
    return report
