"""The scripted mock model by hand: ``python tests/mock_model_cli.py --port 8765`` (loopback only)."""

from __future__ import annotations

import argparse
import time

from mock_model import MockModel


def main() -> None:
    parser = argparse.ArgumentParser(description="Scripted mock model server (loopback only).")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--command", default="echo hi > done.txt", help="the shell command of the tool call")
    parser.add_argument("--final-text", default="done")
    parser.add_argument("--log", help="append every request as a JSON line to this file")
    args = parser.parse_args()
    mock = MockModel(args.command, final_text=args.final_text, log_path=args.log, port=args.port).start()
    print(f"mock model on {mock.base_url} (OpenAI base {mock.base_url}/v1); Ctrl-C stops", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        mock.stop()


if __name__ == "__main__":
    main()
