"""What a hostile agent (root in the container) leaves for the verifier's runner, as one shell
script run with the container's own bash, and the evil library it plants (compiled on the host
from tests/fixtures/supplied_runner/evil.c). Each probe leaves a marker ``/tmp/EVIL-<what>-R-<pid>``
when its code runs in a runner process (an executable on the runner's mount) and ``-C-`` when it
runs in one of the container's own programs (which the tests run on purpose: the container is
their subject). Forging plug-ins turn every test into a pass."""

from __future__ import annotations

import subprocess
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "supplied_runner"
EVIL_LIBS = ("preload", "nss", "openssl")


def compile_evil(out: Path) -> dict[str, Path]:
    """One evil .so per probe (the marker names which one ran)."""
    libs = {}
    for name in EVIL_LIBS:
        libs[name] = out / f"evil-{name}.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", f'-DEVIL_NAME="{name}"', "-o", str(libs[name]),
                        str(FIXTURES / "evil.c")], check=True, capture_output=True, timeout=120)
    return libs


def tag(name: str) -> str:
    """A line of Python (valid in a .pth too) that leaves the probe's marker."""
    return ('import os; open("/tmp/EVIL-%s-%s-%d" % ("' + name + '", "R" if os.readlink("/proc/self/exe")'
            '.startswith("/opt/tbflow/runner/") else "C", os.getpid()), "w")')


FORGE = '''import os, pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rep.outcome, rep.longrepr = "passed", None
    exe = "R" if os.readlink("/proc/self/exe").startswith("/opt/tbflow/runner/") else "C"
    open("/tmp/EVIL-forge-%s-%s-%d" % (__name__.replace(".", "_"), exe, os.getpid()), "w").close()
'''

SITE_DIRS = ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3.13/dist-packages",
             "/usr/lib/python3.13/site-packages", "/usr/lib/python3.11/site-packages",
             "/root/.local/lib/python3.13/site-packages", "/root/.local/lib/python3.11/site-packages")

OPENSSL_CNF = """openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
evil = evil_sect
default = default_sect
[default_sect]
activate = 1
[evil_sect]
module = /srv/evil/evil-openssl.so
activate = 1
"""


def plant_script() -> str:
    """The agent's phase: every probe at once; ld.so.preload last (it then reaches every program)."""
    lines = ["set -e", "mkdir -p /srv/evilpy /etc/python3.13 /usr/lib/ssl /opt/tbflow/lib /app",
             f"cat >/srv/evilpy/evilplug.py <<'PY'\n{FORGE}PY",
             # pytest's ini and conftest discovery above /tests and in the working dir
             "printf '[pytest]\\naddopts = -p evilplug\\npythonpath = /srv/evilpy\\n' >/pytest.ini",
             "cp /pytest.ini /app/pytest.ini",
             # and where the container's own python finds it before pythonpath applies (pytest 7 imports -p early)
             "cp /srv/evilpy/evilplug.py /usr/lib/python3/dist-packages/evilplug.py",
             f"cat >/conftest.py <<'PY'\n{FORGE}PY", "cp /conftest.py /app/conftest.py",
             # Python's site: Debian's absolute sitecustomize link, site dirs, user site
             f"echo '{tag('sitecustomize-etc')}' >/etc/python3.13/sitecustomize.py",
             f"echo '{tag('sitecustomize-dist')}' >/usr/lib/python3/dist-packages/sitecustomize.py"]
    for d in SITE_DIRS:
        slug = d.strip("/").replace("/", "_")
        lines += [f"mkdir -p {d}", f"echo '{tag('pth-' + slug)}' >{d}/evil.pth"]
    lines += [f"echo '{tag('usercustomize')}' >/root/.local/lib/python3.13/site-packages/usercustomize.py",
              # CPython's landmark search: a python313.zip above the runner's bin/
              "cp -a /opt/tbflow/runner/lib/python3.13 /opt/tbflow/lib/ && chmod -R u+w /opt/tbflow/lib/python3.13",
              f"echo '{tag('landmark')}' >>/opt/tbflow/lib/python3.13/encodings/__init__.py",
              "python3 -c 'import zipfile; zipfile.ZipFile(\"/opt/tbflow/lib/python313.zip\", \"w\")"
              ".writestr(\"evilzip.py\", \"x = 1\")'",
              # OpenSSL's config loading a provider (code)
              f"cat >/usr/lib/ssl/openssl.cnf <<'CNF'\n{OPENSSL_CNF}CNF",
              # NSS: a module named in nsswitch.conf, in the system library dir
              "cp /srv/evil/evil-nss.so /lib/x86_64-linux-gnu/libnss_evil.so.2",
              "sed -i -e 's/^hosts:.*/hosts: evil files/' -e 's/^passwd:.*/passwd: evil files/' /etc/nsswitch.conf",
              # the loader's preload list
              "cp /srv/evil/evil-preload.so /usr/local/lib/evil-preload.so",
              "echo /usr/local/lib/evil-preload.so >/etc/ld.so.preload",
              "echo hello >/app/x"]
    return "\n".join(lines) + "\n"
