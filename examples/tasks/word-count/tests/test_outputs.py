import subprocess


def run(text, tmp_path):
    f = tmp_path / "in.txt"
    f.write_text(text)
    return subprocess.run(["/app/wc.sh", str(f)], capture_output=True, text=True, timeout=10)


def test_counts_words(tmp_path):
    assert run("one two  three\nfour\n", tmp_path).stdout.strip() == "4"


def test_empty_file(tmp_path):
    assert run("", tmp_path).stdout.strip() == "0"
