"""Expected-score regression checks (in the spirit of pyserini's regressions).

A reference file (YAML) pins what one system must score on each dataset:

    system: bm25
    tolerance: 0.015            # allowed |measured - reference|, both directions
    source: how the references were measured
    recipe: hybrid              # optional: only runs of this recipe are held to it
    datasets:
      scifact: {ndcg@10: 0.676, recall@100: 0.9}
      scifact:novel: {ndcg@10: 0.67}   # a subset of the evaluate stage's `overlap` section (seen / novel)

A score too far BELOW the reference is a regression; too far ABOVE is flagged as well, since
it usually means the setup changed (other data, leakage, different tokenization).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from uniret.config.loader import ConfigError
from uniret.core.metric_names import parse_metric
from uniret.evaluation.overlap_scores import OVERLAP_KEY
from uniret.utils.text import excerpt

ALLOWED_KEYS = frozenset({"system", "tolerance", "source", "recipe", "datasets"})


@dataclass(frozen=True)
class Expected:
    """The parsed content of one reference file."""

    path: Path
    system: str
    tolerance: float
    scores: dict[str, dict[str, float]]  # {dataset: {metric: reference value}}
    source: str = ""
    recipe: str | None = None  # the reference holds for models trained by this recipe only


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{where}: expected a number, got {excerpt(value)}")
    return float(value)


def load_expected(path: str | os.PathLike) -> Expected:
    """Read and check a reference file; ConfigError names the file and the key."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: expected-scores file not found") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    unknown = sorted(set(raw) - ALLOWED_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(ALLOWED_KEYS))}")
    recipe = raw.get("recipe")
    if recipe is not None and (not isinstance(recipe, str) or not recipe):
        raise ConfigError(f"{path}: recipe: expected a recipe name, got {excerpt(recipe)}")
    system = raw.get("system")
    if not isinstance(system, str) or not system:
        raise ConfigError(f"{path}: system: expected a system name, got {excerpt(system)}")
    tolerance = _number(raw.get("tolerance"), f"{path}: tolerance")
    if tolerance < 0:
        raise ConfigError(f"{path}: tolerance: must be >= 0, got {tolerance}")
    datasets = raw.get("datasets")
    if not isinstance(datasets, dict) or not datasets:
        raise ConfigError(f"{path}: datasets: expected a mapping of dataset -> {{metric: value}}")
    scores: dict[str, dict[str, float]] = {}
    for dataset, values in datasets.items():
        where = f"{path}: datasets.{dataset}"
        if not isinstance(values, dict) or not values:
            raise ConfigError(f"{where}: expected a mapping of metric -> value")
        for metric, value in values.items():
            try:
                parse_metric(metric)
            except ValueError as exc:
                raise ConfigError(f"{where}.{metric}: {exc}") from exc
            scores.setdefault(str(dataset), {})[metric] = _number(value, f"{where}.{metric}")
    return Expected(path, system, tolerance, scores, str(raw.get("source") or ""), recipe)


def _systems(metrics: dict[str, Any], key: str) -> dict[str, Any] | None:
    """{system: {metric: value}} of a dataset ("scifact") or of its overlap subset ("scifact:novel")."""
    dataset, _, subset = key.partition(":")
    if not subset:
        return metrics.get("datasets", {}).get(dataset)
    return ((metrics.get(OVERLAP_KEY) or {}).get(dataset) or {}).get(subset)


def compare(metrics: dict[str, Any], expected: Expected) -> list[str]:
    """Failures of a metrics.json document against one reference; [] when everything is within tolerance."""
    failures = []
    for dataset, refs in expected.scores.items():
        systems = _systems(metrics, dataset)
        if systems is None:
            failures.append(f"{expected.system} {dataset}: dataset not evaluated (reference in {expected.path})")
            continue
        measured = systems.get(expected.system)
        if measured is None:
            failures.append(f"{expected.system} {dataset}: system not evaluated (reference in {expected.path})")
            continue
        for metric, ref in refs.items():
            value = measured.get(metric)
            if value is None:
                failures.append(f"{expected.system} {dataset} {metric}: not measured (add it to evaluate.metrics)")
            elif abs(value - ref) > expected.tolerance:
                failures.append(
                    f"{expected.system} {dataset} {metric}: measured {value:.4f}, expected {ref:.4f} "
                    f"+/- {expected.tolerance} (off by {value - ref:+.4f})"
                )
    return failures


def not_applicable(metrics: dict[str, Any], expected: Expected, recipe: str | None) -> str | None:
    """Why a reference does not apply to this run (another recipe, or its system never evaluated), else None.

    A system evaluated on some datasets but not others is not skipped: compare() reports the gaps.
    """
    if expected.recipe is not None and recipe is not None and expected.recipe != recipe:
        return f"{expected.path.name} holds for recipe {expected.recipe}, this run trains {recipe}"
    if not any(expected.system in systems for systems in metrics.get("datasets", {}).values()):
        return f"{expected.path.name}: system {expected.system} was not evaluated in this run (evaluate.sources)"
    return None


def check_expected(metrics: dict[str, Any], path: str | os.PathLike) -> list[str]:
    """Check a metrics.json document against the reference file at `path`; return failure strings."""
    return compare(metrics, load_expected(path))
