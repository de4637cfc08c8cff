"""A real HTTP(S) server on 127.0.0.1 for the transport tests."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from _support.servers import serving


@dataclass
class Server:
    port: int
    requests: list[tuple[str, str]] = field(default_factory=list)  # (path, Host header)
    sni: list[str | None] = field(default_factory=list)

    def url(self, path: str = "/", host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            host = self.headers.get("Host", "")
            server.requests.append((self.path, host))
            parts = urlsplit(self.path)
            if parts.path == "/redirect":
                target = parse_qs(parts.query)["to"][0]
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = f"host={host}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def _serve(tls: ssl.SSLContext | None) -> Iterator[Server]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server = Server(port=httpd.server_address[1])
    httpd.RequestHandlerClass = _handler(server)
    if tls is not None:
        tls.sni_callback = lambda sock, name, ctx: server.sni.append(name)  # type: ignore[assignment,misc]
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    with serving(httpd):
        yield server


@pytest.fixture
def http_server() -> Iterator[Server]:
    yield from _serve(None)


@dataclass(frozen=True)
class Cert:
    hostname: str
    cert_file: Path
    key_file: Path

    def client_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.cert_file))
        return ctx


@pytest.fixture(scope="session")
def cert(tmp_path_factory: pytest.TempPathFactory) -> Cert:
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    hostname = "pinned.test"
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return Cert(hostname, cert_file, key_file)


@pytest.fixture
def https_server(cert: Cert) -> Iterator[Server]:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert.cert_file, cert.key_file)
    yield from _serve(ctx)
