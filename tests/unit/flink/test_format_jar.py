"""The changelog format's jar is built on first use and cached (a fresh clone's first ``sink()``
must not trip over a jar nobody built), rebuilt when its sources or Flink change, and a missing
JDK is one clear error."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from mixed_iceberg.exceptions import ConfigError, JdkNotFoundError, MixedIcebergError

pytest.importorskip("pyflink", reason="the flink extra")
# Importing pyflink.table (through mixed_iceberg.flink) warns about its own deprecated classes.
pytestmark = pytest.mark.filterwarnings("ignore:.* has been deprecated since version:DeprecationWarning")


@pytest.fixture
def builder() -> ModuleType:
    from mixed_iceberg.flink import format_jar

    return format_jar


def test_the_sink_builds_the_jar_on_first_use_then_reuses_it(
    builder: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mixed_iceberg.flink.sink import format_jar  # what sink() calls

    if shutil.which("javac") is None:
        pytest.skip("no JDK here")
    monkeypatch.delenv("MIXED_ICEBERG_FLINK_FORMAT_JAR", raising=False)
    monkeypatch.setenv("MIXED_ICEBERG_JARS_DIR", str(tmp_path / "jars"))  # a fresh machine: nothing built

    jar = format_jar()
    assert jar.parent == (tmp_path / "jars" / "flink-format").resolve()
    assert jar.name.startswith(builder.JAR_PREFIX)
    with zipfile.ZipFile(jar) as archive:
        names = set(archive.namelist())
        factories = archive.read("META-INF/services/org.apache.flink.table.factories.Factory").decode()
    assert "mixediceberg/flink/ChangelogJsonSerializationSchema.class" in names
    assert "mixediceberg/flink/LogStoreDeserializationSchema.class" in names
    assert "mixediceberg.flink.ChangelogJsonFormatFactory" in factories
    assert "mixediceberg.flink.LogStoreFormatFactory" in factories

    built = jar.stat().st_mtime_ns

    def no_compiler(*args: object, **kwargs: object) -> None:
        raise AssertionError("the cached jar was built again")

    monkeypatch.setattr(builder, "_compile", no_compiler)
    assert format_jar() == jar
    assert jar.stat().st_mtime_ns == built


def test_a_changed_source_or_flink_rebuilds_it(builder: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sources = tmp_path / "src-copy"
    shutil.copytree(builder.SOURCES, sources)
    flink = tmp_path / "pyflink"
    (flink / "lib").mkdir(parents=True)
    (flink / "lib" / "flink-dist-2.2.1.jar").touch()
    builds: list[Path] = []

    def fake_compile(javac: Path, src: Path, home: Path, jar: Path) -> None:
        builds.append(src)
        jar.write_bytes(b"jar %d" % len(builds))

    monkeypatch.setattr(builder, "_compile", fake_compile)
    monkeypatch.setattr(builder, "jdk_compiler", lambda: Path("/usr/bin/javac"))
    out = tmp_path / "out"

    def build() -> tuple[str, bytes]:
        jar = builder.build_format_jar(out, sources=sources, flink=flink)
        return jar.name, jar.read_bytes()

    first = build()
    assert first[1] == b"jar 1"
    assert build() == first  # cached
    java = next(sources.rglob("ChangelogJsonSerializationSchema.java"))
    java.write_text(java.read_text() + "\n// changed\n")
    second = build()
    assert second[1] == b"jar 2"
    assert second[0] != first[0]  # a jar of its own: clients of the old sources keep theirs
    assert (out / first[0]).read_bytes() == b"jar 1"
    (flink / "lib" / "flink-dist-2.2.1.jar").rename(flink / "lib" / "flink-dist-2.3.0.jar")
    assert build()[1] == b"jar 3"
    assert build()[1] == b"jar 3"


def test_no_jdk_is_one_clear_error(builder: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no javac on it
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("MIXED_ICEBERG_FLINK_FORMAT_JAR", raising=False)
    monkeypatch.setenv("MIXED_ICEBERG_JARS_DIR", str(tmp_path / "jars"))
    with pytest.raises(JdkNotFoundError, match="needs a JDK 17: no javac") as raised:
        builder.format_jar()
    assert isinstance(raised.value, MixedIcebergError)
    assert not list((tmp_path / "jars").rglob("*.jar"))


def test_a_named_jar_is_used_as_it_is(builder: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    named = tmp_path / "mine.jar"
    monkeypatch.setenv("MIXED_ICEBERG_FLINK_FORMAT_JAR", str(named))
    with pytest.raises(ConfigError, match="no such file"):
        builder.format_jar()
    named.touch()
    assert builder.format_jar() == named.resolve()
