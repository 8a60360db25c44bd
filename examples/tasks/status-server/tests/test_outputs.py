import urllib.request


def test_status_served():
    with urllib.request.urlopen("http://127.0.0.1:8000/status.txt", timeout=5) as r:
        assert r.read().decode().strip() == "ok"
