"""A local S3-compatible server for the tests: moto's S3 in server mode, on a free loopback
port, in a child process the tests start and stop themselves.

moto's stock server is threaded and checks ``If-None-Match: *`` apart from the write that
follows, so two racing conditional puts of one key both succeeded in about 1 of 100 rounds of
16 writers (measured). Real S3 decides such a race atomically; here every request is
served one at a time (``threaded=False``), which makes the check and the write one step, so
the commit-race tests test our code and not moto's race.

Run as a script: ``python tests/s3_server.py PORT``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    def storage_options(self) -> dict[str, str]:
        """deltalake's (and our ``configure_storage``'s) options for this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
        }

    def s3a_settings(self, bucket: str) -> dict[str, str]:
        """Hadoop's S3A settings reaching this server for one bucket (``spark.hadoop.`` +
        key on a session builder, or set in a running context's Hadoop configuration)."""
        prefix = f"fs.s3a.bucket.{bucket}."
        return {
            prefix + "endpoint": self.endpoint,
            prefix + "endpoint.region": "us-east-1",
            prefix + "path.style.access": "true",
            prefix + "connection.ssl.enabled": "false",
            prefix + "access.key": "test",
            prefix + "secret.key": "test",
            prefix + "aws.credentials.provider": (
                "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
            ),
        }

    def create_bucket(self, name: str) -> str:
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
        return name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_s3_server() -> Iterator[S3Server]:
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, __file__, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MOTO_PORT": str(port)},
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(endpoint, timeout=5):
                    break
            except OSError:
                if child.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the S3 test server did not start on {endpoint}") from None
                time.sleep(0.2)
        yield S3Server(endpoint)
    finally:
        child.terminate()
        child.wait(timeout=30)


def _serve(port: int) -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple

    app = DomainDispatcherApplication(create_backend_app)
    run_simple("127.0.0.1", port, app, threaded=False, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
