"""Where the Anserini fat jar is: the one pyserini packages, or the folder $ANSERINI_CLASSPATH names.

Read by the JVM start-up (jvm) and by the Java helpers' compiler (java_helpers), which keys its
cache by the jar; neither of those two needs the other for it.
"""

from __future__ import annotations

import glob
import importlib.resources
import os
from pathlib import Path

# pyserini honours this variable to point at another Anserini jar folder; so do we.
ANSERINI_CLASSPATH_ENV = "ANSERINI_CLASSPATH"


def anserini_jar() -> Path:
    """The Anserini fat jar: $ANSERINI_CLASSPATH's newest, else the one packaged with pyserini."""
    folder = os.environ.get(ANSERINI_CLASSPATH_ENV) or str(
        importlib.resources.files("pyserini.resources.jars")
    )
    jars = glob.glob(os.path.join(folder, "anserini-*-fatjar.jar"))
    if not jars:
        raise FileNotFoundError(f"{folder}: no anserini-*-fatjar.jar found (is pyserini installed?)")
    return Path(max(jars, key=os.path.getctime))
