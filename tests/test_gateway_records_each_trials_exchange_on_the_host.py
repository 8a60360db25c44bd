"""The gateway records every request of a registered trial and its reply to the file given at
registration: streams reassembled into the API's JSON shape, status, timing and the gateway's
token count; a request that repeats the conversation is stored as what is new in it and read
back whole; no header, key or trial token is written; after unregistering nothing more is."""

import json

from gateway_helpers import APIS, GEMINI, GEMINI_JSON, OPENAI_KEY, make_rig

from tasks_lib.gateway.exchange.exchange_model import EXCHANGE_FILE
from tasks_lib.gateway.exchange.exchange_reader import read_exchange
from tasks_lib.gateway.model_gateway import TOKEN_PREFIX


def test_each_api_turn_is_recorded_whole_and_read_back(tmp_path):
    record = tmp_path / "trial" / EXCHANGE_FILE
    sent = []
    with make_rig(tmp_path) as rig:
        token = rig.gateway.register_trial("t", record_to=record)
        with rig.client() as client:
            for api, stream in [(a, True) for a in APIS] + [(GEMINI, True), (GEMINI_JSON, False)]:
                for turn in ("tool", "final"):
                    body = api.body(turn, stream)
                    sent.append(body)
                    assert client.post(api.path, headers=api.headers(token), json=body).status_code == 200
            rig.gateway.unregister_trial("t")
            assert client.post(APIS[1].path, headers=APIS[1].headers(token), json=sent[2]).status_code == 401
    text = record.read_text()
    assert token not in text and TOKEN_PREFIX not in text and OPENAI_KEY not in text
    assert "authorization" not in text.lower() and "x-api-key" not in text.lower()
    entries = list(read_exchange(record))
    assert [e.request for e in entries] == sent  # every request, whole again
    assert [e.api for e in entries[::2]] == ["openai-responses", "openai-chat", "anthropic-messages",
                                             "gemini-generate-content", "gemini-generate-content"]
    assert all(e.status == 200 and e.input_tokens and e.output_tokens and e.ms >= 0 for e in entries)
    responses, chat, anthropic, gemini = entries[0], entries[2], entries[4], entries[6]
    assert responses.stream and responses.reply["output"][0]["type"] == "function_call"
    assert json.loads(chat.reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])["command"]
    assert anthropic.reply["content"][0]["input"]["command"]
    assert gemini.reply["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "run_shell_command"
    assert entries[5].reply["content"][0]["text"] and entries[7].reply["candidates"][0]["content"]["parts"][0]["text"]


def test_the_repeated_history_is_not_stored_again(tmp_path):
    record = tmp_path / "trial" / EXCHANGE_FILE
    chat = APIS[1]
    with make_rig(tmp_path) as rig:
        token = rig.gateway.register_trial("t", record_to=record)
        with rig.client() as client:
            for turn in ("tool", "final"):
                client.post(chat.path, headers=chat.headers(token), json=chat.body(turn, True))
    stored = [json.loads(line) for line in record.read_text().splitlines()]
    second = stored[1]
    # keys in the base's order: no "order" stored (it is stored only when the client reorders them)
    assert second["history"] == {"base": 1, "field": "messages", "keep": 1}
    assert len(second["request"]["messages"]) == 2  # the model's call and the tool's output, not the task again
    assert "tools" in second["unchanged"] and "tools" not in second["request"]
