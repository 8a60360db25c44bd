"""tbflow-agent's loop: ask the model, run the tool calls it makes, until it is done or time is up.

One request per turn on the Chat Completions API (not streamed: the gateway counts usage from the
JSON reply as from a stream), through the gateway's socket with the trial's token. A failed
request is retried twice (429, 5xx, a dropped connection; like the CLIs' few retries, so a model
that keeps failing ends the trial soon); any other error (a 401) ends the loop with an ``error``
event, which is the trial's error line. Every model reply is logged the moment it arrives.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from harnesses.tbflow_agent.events import EventLog
from harnesses.tbflow_agent.tools import DEFAULT_COMMAND_TIMEOUT_SEC, TOOLS, bound_output, result_text, time_left_text
from tasks_lib.trial.host_agent_api import AgentSession

SYSTEM = ("You are an agent working in a Linux environment through a bash tool. Solve the task you are "
          "given by running commands; check your work. Every command runs in a fresh shell. When the task "
          "is done, call task_complete. Time is limited: the time left is shown after each result.")
MAX_TURNS = 300
RETRIES = 2
#: the longest one model request may take (the time left caps it too)
REQUEST_TIMEOUT_SEC = 600.0


class ModelError(Exception):
    """The model could not be asked (the message is the trial's error line)."""


class OutOfTime(Exception):
    """The deadline came."""


def run_loop(session: AgentSession, log: EventLog) -> str:
    """Run the episode; return why it ended (``task_complete``, ``answered``, ``deadline``,
    ``model-error``, ``max-turns``)."""
    if session.model is None:
        raise ModelError("tbflow-agent is a model harness but got no model access")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{session.instruction}\n\n{time_left_text(session.remaining())}"}]
    with session.model.http_client() as client:
        for turn in range(1, MAX_TURNS + 1):
            try:
                message = _ask(client, session, messages, log, turn)
            except ModelError as exc:
                log.write("error", turn=turn, message=str(exc))
                return "model-error"
            except OutOfTime:
                return "deadline"
            calls = message.get("tool_calls") or []
            messages.append({"role": "assistant", "content": message.get("content"), **({"tool_calls": calls} if calls
                                                                                         else {})})
            if not calls:
                return "answered"
            for call in calls:
                fn = call.get("function") or {}
                if fn.get("name") == "task_complete":
                    return "task_complete"
                messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                                 "content": _run_tool(session, log, turn, fn)})
            if session.stopped:
                return "deadline"
    return "max-turns"


def _ask(client: httpx.Client, session: AgentSession, messages: list[dict], log: EventLog, turn: int) -> dict:
    """One model reply (logged with its usage), after at most ``RETRIES`` retries."""
    body = {"model": session.model.model if session.model else "", "messages": messages, "tools": TOOLS,
            "tool_choice": "auto"}
    for attempt in range(RETRIES + 1):
        left = session.remaining()
        if session.stopped or left < 1:
            raise OutOfTime()
        try:
            resp = client.post("/v1/chat/completions", json=body, timeout=min(left, REQUEST_TIMEOUT_SEC))
        except httpx.HTTPError as exc:
            problem = f"model request failed: {type(exc).__name__}: {exc}"
        else:
            if resp.status_code == 200:
                return _logged_reply(resp, log, turn)
            problem = f"model request failed: HTTP {resp.status_code}: {_error_message(resp)}"
            if resp.status_code != 429 and resp.status_code < 500:
                raise ModelError(problem)
        if attempt < RETRIES:
            log.write("retry", turn=turn, attempt=attempt + 1, message=problem)
            time.sleep(min(2.0 ** attempt, max(0.0, session.remaining() - 1)))
    raise ModelError(problem)


def _logged_reply(resp: httpx.Response, log: EventLog, turn: int) -> dict:
    try:
        data = resp.json()
        message = data["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ModelError(f"model reply not understood: {type(exc).__name__}: {resp.text[:300]}") from exc
    usage = data.get("usage") or {}
    log.write("model", turn=turn, usage={"input_tokens": usage.get("prompt_tokens", 0),
                                         "output_tokens": usage.get("completion_tokens", 0)},
              content=message.get("content"), tool_calls=message.get("tool_calls") or [])
    return message


def _error_message(resp: httpx.Response) -> str:
    try:
        error = resp.json().get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
    except ValueError:
        pass
    return resp.text[:500]


def _run_tool(session: AgentSession, log: EventLog, turn: int, fn: dict) -> str:
    name = fn.get("name")
    try:
        args = json.loads(fn.get("arguments") or "{}")
        command = args["command"] if name == "bash" else None
        timeout = float(args.get("timeout_sec") or DEFAULT_COMMAND_TIMEOUT_SEC)
    except (ValueError, KeyError, TypeError, AttributeError):
        log.write("tool", turn=turn, name=name, problem="bad arguments", arguments=fn.get("arguments"))
        return f"tool {name!r} with arguments {fn.get('arguments')!r}: not understood; use bash(command)"
    if not isinstance(command, str):
        log.write("tool", turn=turn, name=name, problem="unknown tool")
        return f"there is no tool {name!r}; use bash or task_complete"
    log.write("tool-start", turn=turn, command=command, timeout_sec=timeout)
    out = session.env.exec(command, timeout=timeout)
    log.write("tool", turn=turn, name="bash", exit_code=out.exit_code, timed_out=out.timed_out,
              output_bytes=out.output_bytes, duration_sec=out.duration_sec, error=out.error,
              output=bound_output(out.output, 2000))
    return result_text(out, session.remaining())
