"""What every store shares: a client's error inside ``translating`` becomes the store's DB_ERROR."""

from __future__ import annotations

import pytest

from indexfoundry.backends.stores import store_error, translating
from indexfoundry.errors import ConfigInvalid, DbError, IndexFoundryError


def _wording(action: str, exc: BaseException) -> DbError:
    return store_error("Teststore", action, exc, recoverable=isinstance(exc, TimeoutError), suggestion="rerun")


def test_a_client_error_inside_translating_is_the_stores_db_error_and_own_errors_pass_through():
    with pytest.raises(IndexFoundryError) as failed, translating(_wording, "upsert"):
        raise TimeoutError("server\n  went   away")
    assert failed.value.code == "DB_ERROR" and failed.value.recoverable is True
    assert failed.value.message == "Teststore upsert failed: TimeoutError: server went away"
    assert failed.value.suggestion == "rerun"
    assert failed.value.__cause__ is None and failed.value.__suppress_context__
    # IndexFoundry's own errors keep their code (an unset key variable is CONFIG_INVALID) ...
    for own in (ConfigInvalid("key variable not set"), DbError("collection 'x' does not exist")):
        with pytest.raises(IndexFoundryError) as kept, translating(_wording, "connection"):
            raise own
        assert kept.value is own
    # ... and so does an interrupt; a block that succeeds returns its value unchanged.
    with pytest.raises(KeyboardInterrupt), translating(_wording, "query"):
        raise KeyboardInterrupt
    with translating(_wording, "count"):
        value = 3
    assert value == 3
