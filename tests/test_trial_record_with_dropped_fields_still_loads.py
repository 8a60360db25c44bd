"""A trial.json written by an older tbflow still loads: its spec's ``identity_digest`` and
``generation`` (the keys of the build-image cache tbflow no longer has) are ignored, so resume and
the reports keep reading it instead of treating the trial as unfinished."""

import json

from report_fixtures import make_trial

from tasks_lib.store.job_store import TRIAL_FILE, JobStore


def test_record_carrying_removed_spec_fields_reads_as_the_same_record(tmp_path):
    record = make_trial("a", "oracle")
    store = JobStore(tmp_path / "j")
    store.write_trial(record)
    path = store.trial_dir(record.trial_id) / TRIAL_FILE
    old = json.loads(path.read_text(encoding="utf-8"))
    old["spec"] |= {"identity_digest": "ab" * 32, "generation": 2}
    path.write_text(json.dumps(old), encoding="utf-8")
    assert store.read_trial(record.trial_id) == record
