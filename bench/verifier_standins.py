"""Local stand-ins for the network a Terminal-Bench 2.x test.sh reaches, and a byte-counting proxy.

    .venv/bin/python bench/verifier_standins.py WORK_DIR [--listen 172.17.0.1:3128]

Why: bench/tb21_verifier.py compares the verifier stage with tbflow's supplied runner against
test.sh run verbatim, and verbatim test.sh downloads: ``apt-get install curl`` (Debian mirror),
``curl https://astral.sh/uv/0.9.5/install.sh | sh`` (the installer, which fetches uv's release
tarball from github.com) and ``uvx`` (wheels from PyPI). This machine reaches only PyPI and the
Debian mirror, so astral.sh and github.com are served here, and every byte a container fetches
goes through one HTTP proxy that logs it, which is how the bench counts the verifier's downloads.

- A CA and one certificate for astral.sh and github.com (openssl CLI) in WORK_DIR; the bench
  image trusts the CA (and the machine's egress CA, which PyPI and the mirror are reached through).
- uv 0.9.5 as its release tarball ``uv-x86_64-unknown-linux-gnu.tar.gz``, rebuilt from the
  ``uv==0.9.5`` manylinux wheel on PyPI (the same ``uv`` and ``uvx`` binaries the release ships).
- ``install.sh``: a short stand-in for uv's installer (the real one is not reachable here). Like
  the real one it downloads that tarball from github.com, puts uv and uvx in ~/.local/bin and
  writes ~/.local/bin/env; it is smaller than the real script (about 60 KB), noted in RESULTS.md.
- The proxy (``http_proxy``/``https_proxy`` in the bench image): CONNECT to astral.sh or
  github.com goes to the TLS stand-in, any other host goes out directly (PyPI, deb.debian.org);
  plain HTTP (apt) is forwarded to the host of the first request line. One JSON line per
  connection in WORK_DIR/proxy.jsonl: start, end, client, host, bytes to the client.
"""

from __future__ import annotations

import asyncio
import io
import json
import ssl
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

UV = "0.9.5"
TARGET = "uv-x86_64-unknown-linux-gnu"
STANDIN_HOSTS = ("astral.sh", "github.com")
INSTALLER = """#!/bin/sh
# Stand-in for https://astral.sh/uv/{uv}/install.sh (tbflow bench, not astral's script):
# fetch uv's release tarball from github.com, install uv and uvx in ~/.local/bin, write its env file.
set -eu
url="https://github.com/astral-sh/uv/releases/download/{uv}/{target}.tar.gz"
tmp="$(mktemp -d)"
echo "downloading uv {uv} x86_64-unknown-linux-gnu"
curl -LsSf "$url" -o "$tmp/uv.tar.gz"
tar -xzf "$tmp/uv.tar.gz" -C "$tmp"
mkdir -p "$HOME/.local/bin"
cp "$tmp/{target}/uv" "$tmp/{target}/uvx" "$HOME/.local/bin/"
printf '%s\\n' '#!/bin/sh' \\
  'case ":${{PATH}}:" in *:"$HOME/.local/bin":*) ;; *) export PATH="$HOME/.local/bin:$PATH" ;; esac' \\
  >"$HOME/.local/bin/env"
echo "everything's installed!"
rm -rf "$tmp"
"""


def run(*argv: str, cwd: Path) -> None:
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)


def make_certs(work: Path) -> None:
    """CA + one leaf with both stand-in names (SAN), signed by the CA."""
    if (work / "leaf.crt").exists():
        return
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", "/CN=tbflow bench stand-in CA",
        "-keyout", "ca.key", "-out", "ca.crt", cwd=work)
    (work / "san.ext").write_text("subjectAltName=" + ",".join(f"DNS:{h}" for h in STANDIN_HOSTS) + "\n")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=astral.sh", "-keyout", "leaf.key", "-out",
        "leaf.csr", cwd=work)
    run("openssl", "x509", "-req", "-in", "leaf.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days",
        "30", "-extfile", "san.ext", "-out", "leaf.crt", cwd=work)


def make_uv_tarball(work: Path) -> None:
    """The release tarball's layout (TARGET/uv, TARGET/uvx) from the PyPI wheel's two binaries."""
    out = work / f"{TARGET}.tar.gz"
    if out.exists():
        return
    wheels = work / "wheel"
    run(sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--platform",
        "manylinux_2_17_x86_64", "--python-version", "3.11", "-d", str(wheels), f"uv=={UV}", cwd=work)
    wheel = next(wheels.glob(f"uv-{UV}-*.whl"))
    part = out.with_name(out.name + ".part")  # renamed when whole: a killed run leaves no half tarball
    with zipfile.ZipFile(wheel) as zf, tarfile.open(part, "w:gz") as tar:
        for name in ("uv", "uvx"):
            data = zf.read(f"uv-{UV}.data/scripts/{name}")
            info = tarfile.TarInfo(f"{TARGET}/{name}")
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    part.rename(out)


def routes(work: Path) -> dict[str, bytes]:
    tarball = (work / f"{TARGET}.tar.gz").read_bytes()
    return {
        f"/uv/{UV}/install.sh": INSTALLER.format(uv=UV, target=TARGET).encode(),
        f"/astral-sh/uv/releases/download/{UV}/{TARGET}.tar.gz": tarball,
    }


async def serve_tls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, files: dict[str, bytes]) -> None:
    """One GET per connection (curl's way here); 404 for anything else."""
    head = await reader.readuntil(b"\r\n\r\n")
    path = head.split(b" ", 2)[1].decode()
    body = files.get(path)
    status = b"200 OK" if body is not None else b"404 Not Found"
    body = body if body is not None else b"not served by the stand-in\n"
    writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(body)).encode() +
                 b"\r\nConnection: close\r\n\r\n" + body)
    await writer.drain()
    writer.close()


async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, count: list[int]) -> None:
    try:
        while data := await src.read(65536):
            count[0] += len(data)
            dst.write(data)
            await dst.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            dst.close()
        except (ConnectionError, OSError):
            pass


async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tls_port: int, log: Path) -> None:
    t0 = time.time()
    client = writer.get_extra_info("peername")[0]
    head = await reader.readuntil(b"\r\n\r\n")
    method, target = head.split(b" ", 2)[:2]
    if method == b"CONNECT":
        host, _, port = target.decode().rpartition(":")
        where = ("127.0.0.1", tls_port) if host in STANDIN_HOSTS else (host, int(port))
        up_r, up_w = await asyncio.open_connection(*where)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        first = b""
    else:  # plain HTTP, absolute URI: forwarded as is to that host
        host = target.decode().split("/")[2]
        up_r, up_w = await asyncio.open_connection(host.split(":")[0], 80)
        first = head
    up_w.write(first)
    down, up = [0], [0]
    await asyncio.gather(pipe(reader, up_w, up), pipe(up_r, writer, down))
    with log.open("a") as f:
        f.write(json.dumps({"t0": t0, "t1": time.time(), "client": client, "host": host, "down": down[0],
                            "up": up[0] + len(first)}) + "\n")


async def main_async(work: Path, listen: str) -> None:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(work / "leaf.crt", work / "leaf.key")
    files = routes(work)
    tls = await asyncio.start_server(lambda r, w: serve_tls(r, w, files), "127.0.0.1", 0, ssl=ctx)
    tls_port = tls.sockets[0].getsockname()[1]
    addr, port = listen.rsplit(":", 1)
    log = work / "proxy.jsonl"
    srv = await asyncio.start_server(lambda r, w: proxy(r, w, tls_port, log), addr, int(port))
    print(f"proxy on {listen}, TLS stand-in for {', '.join(STANDIN_HOSTS)} on 127.0.0.1:{tls_port}", flush=True)
    async with tls, srv:
        await srv.serve_forever()


def main() -> None:
    work = Path(sys.argv[1]).resolve()
    listen = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--listen" else "172.17.0.1:3128"
    work.mkdir(parents=True, exist_ok=True)
    make_certs(work)
    make_uv_tarball(work)
    asyncio.run(main_async(work, listen))


if __name__ == "__main__":
    main()
