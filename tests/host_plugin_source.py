"""The head of a host-side reference plug-in file for tests: imports and a ``_Base`` class that
prepares nothing. A test appends its own ``class X(_Base)`` with a ``name`` and a ``run``, writes
the text to a file and passes ``FILE:X`` as the harness."""

REFERENCE_BASE = '''\
import json

from tasks_lib.errors import DownloadBoundExceeded
from tasks_lib.trial.harness_api import PreparedHarness
from tasks_lib.trial.host_agent_api import HostHarness


class _Base(HostHarness):
    version = "1.0"
    kind = "reference"
    wire_api = None

    def prepare(self, task):
        return PreparedHarness(name=self.name, version=self.version, kind=self.kind)

'''
