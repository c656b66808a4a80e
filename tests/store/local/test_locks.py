"""The state folder's lock holds across open files (as across processes): a second taker waits for the first."""

import threading
from pathlib import Path

from gateway.store.local.locks import locked


def test_a_second_taker_of_a_folders_lock_waits_until_the_first_lets_go(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "folder"  # made by the first taker
    taken = threading.Event()

    def second() -> None:
        with locked(folder):
            taken.set()

    with locked(folder):
        thread = threading.Thread(target=second)
        thread.start()
        assert not taken.wait(0.3)  # held: the second taker is still waiting
    assert taken.wait(10)
    thread.join()
