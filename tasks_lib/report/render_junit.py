"""Render ``Results`` as JUnit XML, so CI systems show a job like a test run.

Mapping (one ``<testsuite>`` per harness, one ``<testcase>`` per trial):

* scored, reward >= 1 → passed;
* scored, reward < 1 → ``<failure type="reward">`` with the reward and the verifier's last lines;
* invalid → ``<error type="<kind>">`` with the reason, the evidence path and its last lines. An
  invalid trial is an *error* (the test could not be judged), never a failure, exactly as the
  report never averages it as 0;
* a tbflow bug (status ``error``) → ``<error type="internal">`` pointing at ``error.txt``;
* a flagged trial (tampering, a broken container) carries one ``<property name="<flag kind>">``
  per flag, with the evidence path, inside its ``<testcase>``.

Two extra suites appear only when needed, so nothing can go missing silently: ``task-loading``
(tasks that could not be loaded, as errors) and ``not-recorded`` (planned trials without a record,
as skipped). Suite counts are computed from the cases written, so they always add up.

Built with ``xml.etree.ElementTree``, which escapes ``<&>"``. Record and log text is first shown
as ``tasks_lib.text_clean.visible`` shows it (line breaks kept): terminal escapes, bidi overrides
and every character XML 1.0 cannot carry become visible escapes such as ``\\x1b``, so the file
always parses and a CI page shows what the container wrote without acting on it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tasks_lib.report.results_model import Results, TrialResult
from tasks_lib.text_clean import shorten, visible

MESSAGE_CHARS = 500


def _attr(value: object) -> str:
    return shorten(_text(value), MESSAGE_CHARS)


def _text(value: object) -> str:
    """Untrusted text for an element or attribute: visible escapes, line breaks kept."""
    return visible(str(value), multiline=True)


def case_name(t: TrialResult) -> str:
    return f"{t.record.spec.task_name} [attempt {t.record.spec.attempt}]"


def render_junit(results: Results) -> str:
    job = results.job
    root = ET.Element("testsuites", name=_attr(f"tbflow {job.job_name}"))
    for s in results.summaries:
        trials = [t for t in results.trials if t.record.spec.harness == s.harness]
        suite = _suite(root, s.harness, timestamp=job.started_at.isoformat(timespec="seconds"))
        props = ET.SubElement(suite, "properties")
        for name, value in (("job_id", job.job_id), ("dataset", job.dataset), ("model", job.model),
                            ("harness_version", s.harness_version), ("harness_kind", s.harness_kind),
                            ("scored", s.scored), ("invalid", s.invalid),
                            ("mean_reward_over_scored", None if s.mean_reward is None else f"{s.mean_reward:.4f}")):
            if value is not None:
                ET.SubElement(props, "property", name=name, value=_attr(value))
        for t in trials:
            _trial_case(suite, s.harness, t)
    if results.task_problems:
        suite = _suite(root, "task-loading")
        for p in results.task_problems:
            case = ET.SubElement(suite, "testcase", classname="task-loading", name=_attr(p.name), time="0")
            err = ET.SubElement(case, "error", type="task-format", message=_attr(p.message))
            err.text = _text(f"{p.where}: {p.message}")
    if results.missing_trial_ids:
        suite = _suite(root, "not-recorded")
        for tid in results.missing_trial_ids:
            case = ET.SubElement(suite, "testcase", classname="not-recorded", name=_attr(tid), time="0")
            ET.SubElement(case, "skipped", message="no record: interrupted or not run; resume runs it")
    for suite in root.iter("testsuite"):
        _count(suite)
    _count(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(root: ET.Element, name: str, timestamp: str | None = None) -> ET.Element:
    suite = ET.SubElement(root, "testsuite", name=_attr(name))
    if timestamp:
        suite.set("timestamp", timestamp)
    return suite


def _trial_case(suite: ET.Element, harness: str, t: TrialResult) -> None:
    v = t.record.validity
    case = ET.SubElement(suite, "testcase", classname=_attr(harness), name=_attr(case_name(t)),
                         time=f"{t.record.duration_sec:.3f}")
    if t.record.flags:
        props = ET.SubElement(case, "properties")
        for f in t.record.flags:
            where = f" (evidence: {t.trial_dir}/{f.evidence})" if f.evidence else ""
            ET.SubElement(props, "property", name=f.kind, value=_attr(f"{f.message}{where}"))
    if v.status == "error":
        err = ET.SubElement(case, "error", type="internal", message=_attr(f"tbflow error: {v.reason}"))
        lines = [f"tbflow error: {v.reason}", f"traceback: {t.evidence_path or 'none recorded'}",
                 f"trial: {t.trial_dir}"]
        err.text = _text("\n".join(lines))
    elif v.status == "invalid":
        kind = v.kind or "invalid"
        reason = v.reason or "no reason recorded"
        err = ET.SubElement(case, "error", type=kind, message=_attr(f"invalid ({kind}): {reason}"))
        lines = [f"invalid: {kind}", f"reason: {reason}",
                 f"evidence: {t.evidence_path or 'none recorded'}", f"trial: {t.trial_dir}"]
        if t.evidence_tail:
            lines += ["", f"--- last {len(t.evidence_tail)} lines of {t.evidence_path} ---", *t.evidence_tail]
        err.text = _text("\n".join(lines))
    elif v.reward is not None and v.reward < 1:
        fail = ET.SubElement(case, "failure", type="reward", message=f"reward {v.reward:g} (< 1)")
        lines = [f"reward: {v.reward:g}", f"verifier output: {t.verifier_log or 'none recorded'}",
                 f"trial: {t.trial_dir}"]
        if t.verifier_tail:
            lines += ["", f"--- last {len(t.verifier_tail)} lines of the verifier output ---", *t.verifier_tail]
        fail.text = _text("\n".join(lines))
    out = ET.SubElement(case, "system-out")
    out.text = _text(f"trial: {t.trial_dir}\nreward: {v.reward if v.status == 'scored' else f'none ({v.status})'}")


def _count(node: ET.Element) -> None:
    """Set tests/failures/errors/skipped/time from the cases under ``node``."""
    cases = list(node.iter("testcase"))
    node.set("tests", str(len(cases)))
    node.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    node.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    node.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    node.set("time", f"{sum(float(c.get('time', '0')) for c in cases):.3f}")
