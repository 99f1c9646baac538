"""``mixed-iceberg`` against a real S3 server (SeaweedFS): a table created through the CLI, then
read with a wrong secret: one line naming the failure, exit code 3 (storage), no traceback."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.services import S3Endpoint

pytestmark = pytest.mark.integration


def test_an_s3_access_error_is_one_line_and_exit_code_3(s3_endpoint: S3Endpoint, tmp_path: Path) -> None:
    location = s3_endpoint.warehouse("cli", uuid.uuid4().hex)

    def catalogs(secret: str) -> str:  # one catalog name: a SQL catalog keeps its tables under it
        return "catalogs:\n" + (
            f"  - name: s3\n    type: sql\n    storage:\n      type: s3\n      endpoint: {s3_endpoint.url}\n"
            f"      access-key-id: {s3_endpoint.access_key}\n      secret-access-key: {secret}\n"
            f"      region: {s3_endpoint.region}\n"
            f"    properties:\n      uri: sqlite:///{tmp_path}/catalog.db\n"
            f"      warehouse: {location}\n"
        )

    good, bad = tmp_path / "catalogs.yaml", tmp_path / "wrong-secret.yaml"
    good.write_text(catalogs(s3_endpoint.secret_key))
    bad.write_text(catalogs("not-the-secret"))
    spec = tmp_path / "t.yaml"
    spec.write_text("table: db.t\ncolumns: [{name: id, type: long}, {name: v, type: string}]\nprimary-key: [id]\n")

    def cli(conf: Path, *argv: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "mixed_iceberg.cli.main", "--catalog", "s3", *argv]
        env = {"MIXED_ICEBERG_CATALOGS": str(conf), "PATH": "/usr/bin:/bin"}
        return subprocess.run(command, capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)

    created = cli(good, "create", str(spec))
    assert created.returncode == 0, created.stderr
    assert cli(good, "status", "db.t").returncode == 0
    denied = cli(bad, "status", "db.t")
    assert denied.returncode == 3, denied.stderr
    (line,) = denied.stderr.splitlines()
    assert line.startswith("mixed-iceberg: ")
    assert "ACCESS_DENIED" in line, line  # what S3 said, on the one line
    assert "Traceback" not in denied.stderr
    assert denied.stdout == ""
