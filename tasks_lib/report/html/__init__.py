"""``report.html``: the offline HTML report (one page plus a lazy page per trial)."""
