import json


def test_port_and_debug_changed():
    cfg = json.load(open("/app/settings.json"))
    assert cfg["port"] == 9090
    assert cfg["debug"] is False


def test_other_keys_kept():
    cfg = json.load(open("/app/settings.json"))
    assert cfg["name"] == "inventory"
    assert cfg["workers"] == 4
