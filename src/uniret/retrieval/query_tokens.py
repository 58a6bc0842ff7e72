"""A query's WordPiece ids without the tokenizer's Python binding, for plain ASCII text (E104).

A BERT tokenizer (`BertNormalizer` + `BertPreTokenizer` + `WordPiece`, e.g. MiniLM's) costs about
25 us a query through `tokenizers`, most of it the binding's per-call work (normalising alone: 8 us),
while the static query side's other work is a few table look-ups. For ASCII text with no control
characters, that pipeline reduces to: lower-case (when the normaliser does), split on whitespace and
every ASCII character that is neither a letter nor a digit (BERT counts them all as punctuation,
each its own word), WordPiece each word. Each word's ids are remembered (`CACHE_WORDS` words), so a
query reads them from a dict. Any other text (non-ASCII, control characters, an added token's
text such as "[MASK]") goes through the tokenizer itself: both give the same ids
(tests/retrieval/test_query_tokens.py, on every query of the collections and fuzzed text).
"""

from __future__ import annotations

import re

# a run of ASCII letters and digits, or one ASCII punctuation/symbol character (BERT's _is_punctuation
# holds for every printable ASCII character that is not a letter, digit or space)
ASCII_WORD = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")
# anything outside printable ASCII and the whitespace BERT's clean_text keeps as a space
NOT_PLAIN = re.compile(r"[^\x20-\x7e\t\n\r]")
CACHE_WORDS = 100_000  # words whose ids are remembered (a query stream's vocabulary; about 10 MB at most)


class AsciiWordPiece:
    """Token ids (no special tokens) of a BERT WordPiece tokenizer's Rust backend, plain ASCII text
    split and looked up here; `ids(text)` equals `backend.encode(text, add_special_tokens=False).ids`."""

    def __init__(self, backend, lowercase: bool, added: list[str]):
        self.backend = backend
        self.lowercase = lowercase
        # added tokens' text, any case: a query holding one is tokenized by the backend
        self.added = re.compile("|".join(map(re.escape, added)), re.IGNORECASE) if added else None
        self.words: dict[str, list[int]] = {}

    @classmethod
    def of(cls, backend) -> AsciiWordPiece | None:
        """The fast path for `backend` (a `tokenizers.Tokenizer`), or None when its pipeline is not
        BERT's (another normaliser, pre-tokenizer or model: those keep the backend). Read from the
        pipeline's own objects, not its JSON (which would serialise the whole vocabulary)."""
        from tokenizers import models, normalizers, pre_tokenizers

        norm, pre = getattr(backend, "normalizer", None), getattr(backend, "pre_tokenizer", None)
        if not (isinstance(norm, normalizers.BertNormalizer) and isinstance(pre, pre_tokenizers.BertPreTokenizer)
                and isinstance(getattr(backend, "model", None), models.WordPiece)):
            return None
        if not norm.clean_text:  # control characters would then reach the words
            return None
        added = [token.content for token in backend.get_added_tokens_decoder().values()]
        return cls(backend, bool(norm.lowercase), added)

    def ids(self, text: str) -> list[int]:
        """The token ids of `text`, as the backend gives them."""
        if not text.isascii() or NOT_PLAIN.search(text) or (self.added is not None and self.added.search(text)):
            return self.backend.encode(text, add_special_tokens=False).ids
        out: list[int] = []
        words = self.words
        for word in ASCII_WORD.findall(text.lower() if self.lowercase else text):
            ids = words.get(word)
            if ids is None:
                ids = [token.id for token in self.backend.model.tokenize(word)]
                if len(words) < CACHE_WORDS:
                    words[word] = ids
            out.extend(ids)
        return out
