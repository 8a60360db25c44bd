"""From recorded trials to results.json, report.md, junit.xml and job diffs (templates beside the code)."""
