"""Download a public BEIR dataset zip, verify its checksum and unpack it atomically.

Everything happens in a temp folder beside the destination; only a verified, unpacked BEIR
folder is renamed into place, so a failed fetch leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from tqdm import tqdm

from uniret.core.errors import FetchError
from uniret.data.beir import CORPUS_FILE, QRELS_DIR, QUERIES_FILE
from uniret.utils.files import CHUNK, make_temp_dir
from uniret.utils.names import PLAIN_RULE, is_plain_name
from uniret.utils.owned import check_output_folder
from uniret.utils.text import excerpt

log = logging.getLogger("uniret.data")

BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{name}.zip"

# md5 sums of the public zips as published in the BEIR README (github.com/beir-cellar/beir).
KNOWN_CHECKSUMS: dict[str, str] = {
    "msmarco": "444067daf65d982533ea17ebd59501e4",
    "trec-covid": "ce62140cb23feb9becf6270d0d1fe6d1",
    "nfcorpus": "a89dba18a62ef92f7d323ec890a0d38d",
    "nq": "d4d3d2e48787a744b6f6e691ff534307",
    "hotpotqa": "f412724f78b0d91183a0e86805e16114",
    "fiqa": "17918ed23cd04fb15047f73e6c3bd9d9",
    "arguana": "8ad3e3c2a5867cdced806d6503f29b99",
    "webis-touche2020": "46f650ba5a527fc69e0a6521c5a23563",
    "cqadupstack": "4e41456d7df8ee7760a7f866133bda78",
    "quora": "18fb154900ba42a600f84b839c173167",
    "dbpedia-entity": "c2a39eb420a3164af735795df012ac2c",
    "scidocs": "38121350fc3a4d2f48850f6aff52e4a9",
    "fever": "5a818580227bfb4b35bb6fa46d9b6c03",
    "climate-fever": "8b66f0a9126c521bae2bde127b4dc99d",
    "scifact": "5f7d1de60b170fc8027bb7898e2efca1",
}

# hex digest length -> hashlib algorithm; lets one option carry either kind of checksum.
DIGEST_ALGORITHMS = {32: "md5", 64: "sha256"}



def missing_beir_parts(folder: Path) -> list[str]:
    """What a BEIR folder lacks: corpus.jsonl, queries.jsonl, qrels/*.tsv (empty when complete)."""
    missing = [f for f in (CORPUS_FILE, QUERIES_FILE) if not (folder / f).is_file()]
    qrels = folder / QRELS_DIR
    if not (qrels.is_dir() and any(qrels.glob("*.tsv"))):
        missing.append(f"{QRELS_DIR}/*.tsv")
    return missing


def _algorithm(checksum: str) -> str:
    algo = DIGEST_ALGORITHMS.get(len(checksum))
    if algo is None or not re.fullmatch(r"[0-9a-fA-F]+", checksum):
        raise FetchError(f"checksum {checksum!r} is neither an md5 (32 hex) nor a sha256 (64 hex) digest")
    return algo


def _download(url: str, target: Path, algo: str, timeout: float) -> str:
    """Stream `url` into `target` with a progress bar; return the hex digest of the bytes."""
    digest = hashlib.new(algo)
    request = urllib.request.Request(url, headers={"User-Agent": "uniret"})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - http(s) URLs only, checked by caller
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FetchError(f"{url}: download failed: {reason}") from exc
    with response, target.open("wb") as out:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=target.name, disable=None) as bar:
            for chunk in iter(lambda: response.read(CHUNK), b""):
                out.write(chunk)
                digest.update(chunk)
                bar.update(len(chunk))
    return digest.hexdigest()


def _unzip(archive: Path, target: Path, url: str) -> None:
    """Extract `archive` into `target`, refusing members that would land outside it."""
    root = target.resolve()
    try:
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                dest = (root / member).resolve()
                if dest != root and root not in dest.parents:
                    raise FetchError(f"{url}: zip member {member!r} points outside the target folder")
            zf.extractall(root)
    except zipfile.BadZipFile as exc:
        raise FetchError(f"{url}: not a zip file ({exc})") from exc


def _find_beir_root(unpacked: Path, url: str) -> Path:
    """The BEIR folder inside an unpacked zip: its root, or its single top-level folder."""
    candidates = [unpacked] + sorted(p for p in unpacked.iterdir() if p.is_dir() and not p.name.startswith("__"))
    for cand in candidates:
        if not missing_beir_parts(cand):
            return cand
    found = sorted(str(p.relative_to(unpacked)) for p in unpacked.rglob("*"))[:10]
    raise FetchError(
        f"{url}: not a BEIR zip: expected {CORPUS_FILE}, {QUERIES_FILE} and {QRELS_DIR}/*.tsv "
        f"(at the top or in one folder); found {found or 'nothing'}"
    )


def fetch_dataset(
    name: str,
    dest: str | os.PathLike,
    url: str | None = None,
    sha256: str | None = None,
    force: bool = False,
    timeout: float = 60.0,
) -> Path:
    """Download BEIR dataset `name` into `dest/name`, verified and unpacked atomically.

    `sha256` is the expected checksum of the zip: a sha256 or md5 hex digest (told apart by
    length); by default the md5 published by BEIR for `name`. An existing dataset folder is
    kept unless `force`. Raises FetchError (HTTP status, checksum mismatch, not a BEIR zip);
    on any failure nothing is left in `dest`.
    """
    if not is_plain_name(name):
        raise FetchError(f"dataset name {excerpt(name)} must be {PLAIN_RULE}")
    url = url or BEIR_URL.format(name=name)
    if not url.startswith(("http://", "https://")):
        raise FetchError(f"{url}: only http(s) URLs are supported")
    checksum = (sha256 or KNOWN_CHECKSUMS.get(name) or "").lower()
    if not checksum:
        raise FetchError(f"no known checksum for {name!r}; pass the zip's sha256 or md5 (--sha256)")
    algo = _algorithm(checksum)

    dest = check_output_folder(dest)
    final = dest / name
    if final.exists() and not force:
        missing = missing_beir_parts(final)
        if missing:
            raise FetchError(f"{final} exists but is not a BEIR folder (missing {', '.join(missing)}); use --force")
        log.info("%s already present at %s (use --force to download again)", name, final)
        return final

    dest.mkdir(parents=True, exist_ok=True)
    work = make_temp_dir(dest, f".{name}.fetch-")
    try:
        archive = work / f"{name}.zip"
        log.info("downloading %s", url)
        actual = _download(url, archive, algo, timeout)
        if actual != checksum:
            raise FetchError(f"{url}: {algo} checksum mismatch: expected {checksum}, got {actual}")
        unpacked = work / "unpacked"
        unpacked.mkdir()
        _unzip(archive, unpacked, url)
        root = _find_beir_root(unpacked, url)
        previous = None
        if final.exists():  # force: move the old copy aside so the swap is a rename
            previous = work / "previous"
            os.replace(final, previous)
        try:
            os.replace(root, final)
        except OSError:
            if previous is not None:
                os.replace(previous, final)
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("%s ready at %s (%s verified)", name, final, algo)
    return final
