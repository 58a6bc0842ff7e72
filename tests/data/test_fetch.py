"""`fetch_dataset` and `uniret data fetch` against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
import zipfile
from pathlib import Path

import pytest

from uniret import cli
from uniret.config.sections import SliceConfig
from uniret.core.errors import FetchError
from uniret.data.beir import BeirDataset
from uniret.data.fetch import fetch_dataset
from uniret.data.slicing import write_slice


def _zip_folder(folder: Path, archive: Path, prefix: str) -> Path:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, f"{prefix}/{path.relative_to(folder)}")
    return archive


@pytest.fixture(scope="module")
def served(tmp_path_factory, shared_data):
    """A folder served over HTTP holding scifact.zip (a small real slice) and a non-BEIR zip."""
    root = tmp_path_factory.mktemp("served")
    src = BeirDataset(shared_data / "scifact", "scifact")
    sliced = write_slice(src, root / "build" / "scifact", SliceConfig(max_queries=4, max_docs=40, seed=3))
    _zip_folder(sliced.root, root / "scifact.zip", "scifact")
    (root / "junk").mkdir()
    (root / "junk" / "readme.txt").write_text("not a dataset\n")
    _zip_folder(root / "junk", root / "junk.zip", "junk")

    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep test output quiet
            pass

        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield {"base": base, "root": root, "sliced": sliced, "requests": requests}
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _digest(path: Path, algo: str) -> str:
    return hashlib.new(algo, path.read_bytes()).hexdigest()


@pytest.mark.parametrize("algo", ["sha256", "md5"])
def test_fetch_verifies_and_unpacks(served, tmp_path, algo):
    digest = _digest(served["root"] / "scifact.zip", algo)
    dest = tmp_path / "data"
    out = fetch_dataset("scifact", dest, url=f"{served['base']}/scifact.zip", sha256=digest)
    assert out == dest / "scifact"
    # the unpacked files are byte-identical to the slice that was zipped
    for rel in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/train.tsv"):
        assert (out / rel).read_bytes() == (served["sliced"].root / rel).read_bytes()
    assert len(BeirDataset(out).corpus()) == len(served["sliced"].corpus())
    assert sorted(p.name for p in dest.iterdir()) == ["scifact"]  # no temp folder left


def test_checksum_mismatch_leaves_nothing(served, tmp_path):
    dest = tmp_path / "data"
    wrong = "0" * 64
    actual = _digest(served["root"] / "scifact.zip", "sha256")
    with pytest.raises(FetchError) as err:
        fetch_dataset("scifact", dest, url=f"{served['base']}/scifact.zip", sha256=wrong)
    msg = str(err.value)
    assert "checksum mismatch" in msg and wrong in msg and actual in msg
    assert list(dest.iterdir()) == []


def test_http_404_is_a_clear_error(served, tmp_path):
    dest = tmp_path / "data"
    with pytest.raises(FetchError, match=r"HTTP 404"):
        fetch_dataset("nosuch", dest, url=f"{served['base']}/nosuch.zip", sha256="0" * 32)
    assert list(dest.iterdir()) == []


def test_zip_without_beir_layout_is_rejected(served, tmp_path):
    dest = tmp_path / "data"
    digest = _digest(served["root"] / "junk.zip", "sha256")
    with pytest.raises(FetchError, match=r"not a BEIR zip.*corpus\.jsonl"):
        fetch_dataset("junk", dest, url=f"{served['base']}/junk.zip", sha256=digest)
    assert list(dest.iterdir()) == []


def test_unknown_dataset_needs_a_checksum(tmp_path):
    with pytest.raises(FetchError, match=r"no known checksum for 'mydata'"):
        fetch_dataset("mydata", tmp_path / "data", url="http://127.0.0.1:9/mydata.zip")


def test_existing_dataset_kept_unless_force(served, tmp_path):
    digest = _digest(served["root"] / "scifact.zip", "sha256")
    url = f"{served['base']}/scifact.zip"
    dest = tmp_path / "data"
    out = fetch_dataset("scifact", dest, url=url, sha256=digest)
    marker = out / "marker.txt"
    marker.write_text("old copy")
    before = len(served["requests"])
    fetch_dataset("scifact", dest, url=url, sha256=digest)
    assert len(served["requests"]) == before and marker.exists()  # no download, untouched
    fetch_dataset("scifact", dest, url=url, sha256=digest, force=True)
    assert len(served["requests"]) == before + 1 and not marker.exists()  # replaced
    assert sorted(p.name for p in dest.iterdir()) == ["scifact"]


def test_cli_data_fetch(served, tmp_path, capsys):
    digest = _digest(served["root"] / "scifact.zip", "md5")
    dest = tmp_path / "data"
    url = f"{served['base']}/scifact.zip"
    rc = cli.main(["data", "fetch", "scifact", "--dest", str(dest), "--url", url, "--sha256", digest])
    assert rc == 0
    assert f"ready at {dest / 'scifact'}" in capsys.readouterr().out
    assert (dest / "scifact" / "corpus.jsonl").is_file()

    rc = cli.main(["data", "fetch", "scifact", "--dest", str(tmp_path / "other"), "--url", url, "--sha256", "f" * 32])
    err = capsys.readouterr().err
    assert rc == 1 and "md5 checksum mismatch" in err and digest in err
    assert not (tmp_path / "other" / "scifact").exists()
