"""Synthetic corpora of any size with the shape of a real one, in every form the served routes read.

Encoding a million texts is out of reach on 2 CPU cores, so each synthetic document copies one real
document (drawn uniformly), in all three forms at once, and perturbs each:
- text: its words (whitespace tokens of title and text), each replaced with probability `swap_terms`
  by the word at a uniformly drawn position of the real corpus, i.e. a word drawn by its collection
  frequency, which keeps every word's expected count (and so document lengths and document
  frequencies); Lucene then indexes these texts and BM25's weights come from that index;
- dense: the copied vector plus Gaussian noise (`noise` x the corpus's per-dimension std), rescaled
  to the copied vector's norm, so score scales and the neighbourhood structure stay real;
- impacts: the copied document's term list, a `swap_terms` fraction of its terms replaced by terms
  drawn by document frequency, its integer impacts scaled by a log-normal factor (sigma `noise`), >= 1.
`shape_statistics` checks the result against the real corpus with two-sample Kolmogorov-Smirnov
statistics: of document lengths, and of the document frequency (as a share of the corpus) of the
term behind each posting, the quantity a query's cost follows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

CHUNK = 50_000  # documents synthesised at a time: the temporaries of 1M x 250 impacts stay ~1 GB


@dataclass
class RealCorpus:
    """The real documents a synthetic corpus copies: row i of each array is one document."""

    vectors: np.ndarray  # float32 [docs, dim]
    impacts: sp.csr_matrix  # integer impacts [docs, vocab]
    words: np.ndarray  # int32 word ids of every document, concatenated
    word_offsets: np.ndarray  # int64 [docs + 1]: document i's words are words[offsets[i]:offsets[i + 1]]
    vocab: np.ndarray  # str [distinct words]

    @classmethod
    def from_texts(cls, vectors: np.ndarray, impacts: sp.csr_matrix, texts: list[str]) -> RealCorpus:
        """Tokenise `texts` (one per row of `vectors` / `impacts`) on whitespace."""
        if not len(texts) == vectors.shape[0] == impacts.shape[0]:
            raise ValueError(f"{len(texts)} texts, {vectors.shape[0]} vectors and {impacts.shape[0]} impact rows")
        tokens = [t.split() for t in texts]
        vocab, words = np.unique(np.concatenate([np.asarray(t, dtype=object) for t in tokens] or [[]]).astype(str),
                                 return_inverse=True)
        offsets = np.concatenate([[0], np.cumsum([len(t) for t in tokens])]).astype(np.int64)
        return cls(np.ascontiguousarray(vectors, dtype=np.float32), sp.csr_matrix(impacts),
                   words.astype(np.int32), offsets, vocab)


def _gather(indptr: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions of every item of rows `base` of a CSR-like layout, each row's length)."""
    lengths = np.diff(indptr)[base]
    pos = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(indptr[base] - (np.cumsum(lengths) - lengths), lengths)
    return pos, lengths


class SyntheticCorpus:
    """`n` documents copied from `real` (see the module doc); the same copies in every form."""

    def __init__(self, real: RealCorpus, n: int, noise: float, swap_terms: float, seed: int):
        self.real, self.n, self.noise, self.swap = real, n, noise, swap_terms
        self.seed = seed
        self.base = np.random.default_rng(seed).integers(0, real.vectors.shape[0], size=n)
        self.docids = [f"s{i}" for i in range(n)]

    def _rng(self, form: int, chunk: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, form, chunk])

    def dense(self) -> np.ndarray:
        """float32 [n, dim] document vectors."""
        vec = self.real.vectors
        scale = self.noise * vec.std(axis=0, keepdims=True)
        out = np.empty((self.n, vec.shape[1]), dtype=np.float32)
        for c, lo in enumerate(range(0, self.n, CHUNK)):
            base = self.base[lo:lo + CHUNK]
            part = vec[base] + self._rng(0, c).standard_normal((len(base), vec.shape[1]), dtype=np.float32) * scale
            part *= (np.linalg.norm(vec[base], axis=1) / np.maximum(np.linalg.norm(part, axis=1), 1e-12))[:, None]
            out[lo:lo + len(base)] = part
        return out

    def impacts(self) -> sp.csr_matrix:
        """Integer impacts [n, vocab] (float32 CSR, sorted indices, no duplicates)."""
        real = self.real.impacts
        df = np.bincount(real.indices, minlength=real.shape[1]).astype(np.float64)
        parts = []
        for c, lo in enumerate(range(0, self.n, CHUNK)):
            rng = self._rng(1, c)
            pos, lengths = _gather(real.indptr, self.base[lo:lo + CHUNK])
            terms = real.indices[pos].astype(np.int32)
            swap = rng.random(len(terms)) < self.swap
            terms[swap] = rng.choice(real.shape[1], size=int(swap.sum()), p=df / df.sum())
            weights = np.maximum(1.0, np.rint(real.data[pos] * rng.lognormal(0.0, self.noise, len(pos))))
            part = sp.csr_matrix((weights.astype(np.float32), terms, np.concatenate([[0], np.cumsum(lengths)])),
                                 shape=(len(lengths), real.shape[1]))
            part.sum_duplicates()  # a swapped-in term may repeat one the document has
            parts.append(part)
        return sp.vstack(parts, format="csr")

    def word_ids(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(word ids, offsets) of synthetic documents lo..hi-1 (same draws whenever asked)."""
        out_words, out_offsets = [], [np.zeros(1, dtype=np.int64)]
        for c in range(lo // CHUNK, (hi - 1) // CHUNK + 1):
            rng = self._rng(2, c)
            base = self.base[c * CHUNK:(c + 1) * CHUNK]
            pos, lengths = _gather(self.real.word_offsets, base)
            words = self.real.words[pos]
            swap = rng.random(len(words)) < self.swap
            words[swap] = self.real.words[rng.integers(0, len(self.real.words), size=int(swap.sum()))]
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            a, b = max(lo - c * CHUNK, 0), min(hi - c * CHUNK, len(base))
            out_words.append(words[offsets[a]:offsets[b]])
            out_offsets.append(offsets[a + 1:b + 1] - offsets[a] + out_offsets[-1][-1])
        return np.concatenate(out_words), np.concatenate(out_offsets)

    def texts(self) -> Iterator[tuple[str, str]]:
        """(doc id, text) of every synthetic document, in order."""
        for lo in range(0, self.n, CHUNK):
            hi = min(lo + CHUNK, self.n)
            words, offsets = self.word_ids(lo, hi)
            strings = self.real.vocab[words].tolist()
            for i in range(hi - lo):
                yield self.docids[lo + i], " ".join(strings[offsets[i]:offsets[i + 1]])


def _posting_df_share(indptr: np.ndarray, ids: np.ndarray, n_ids: int) -> tuple[np.ndarray, np.ndarray]:
    """(document lengths, each posting's term's document frequency / documents) of a docs x ids layout."""
    docs = len(indptr) - 1
    row = np.repeat(np.arange(docs, dtype=np.int64), np.diff(indptr))
    distinct = np.unique(row * n_ids + ids.astype(np.int64)) % n_ids  # one posting per (doc, id)
    df = np.bincount(distinct, minlength=n_ids)
    return np.diff(indptr), df[distinct] / max(docs, 1)


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical CDFs."""
    from scipy.stats import ks_2samp

    return round(float(ks_2samp(a, b).statistic), 4)


def shape_statistics(corpus: SyntheticCorpus, impacts: sp.csr_matrix, sample_docs: int = 20_000) -> dict:
    """KS statistics (0: the same distribution) of synthetic vs real: text lengths (words), text
    posting df share, impact document lengths (terms), impact posting df share. The text figures
    use the first `sample_docs` synthetic documents (copies are drawn independently)."""
    real = corpus.real
    n_words = len(real.vocab)
    real_len, real_df = _posting_df_share(real.word_offsets, real.words, n_words)
    words, offsets = corpus.word_ids(0, min(sample_docs, corpus.n))
    syn_len, syn_df = _posting_df_share(offsets, words, n_words)
    rng = np.random.default_rng(corpus.seed)

    def sample(x: np.ndarray, m: int = 200_000) -> np.ndarray:
        return x if len(x) <= m else x[rng.choice(len(x), m, replace=False)]

    vocab = real.impacts.shape[1]
    head = impacts[:sample_docs]
    real_imp_len, real_imp_df = _posting_df_share(real.impacts.indptr, real.impacts.indices, vocab)
    syn_imp_len, syn_imp_df = _posting_df_share(head.indptr, head.indices, vocab)
    return {"text_length_ks": ks_statistic(real_len, syn_len),
            "text_posting_df_ks": ks_statistic(sample(real_df), sample(syn_df)),
            "impact_length_ks": ks_statistic(real_imp_len, syn_imp_len),
            "impact_posting_df_ks": ks_statistic(sample(real_imp_df), sample(syn_imp_df))}
