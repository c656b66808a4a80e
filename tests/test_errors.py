"""What a client sent is shown in an error message cut to a readable size: a name or id may be any size."""

from gateway.errors import TaskNotFound, UnknownName


def test_an_unknown_name_of_any_size_is_named_cut_with_its_length() -> None:
    uri = "k://" + "x" * 5000
    message = str(UnknownName("resource", uri, []))
    assert message.startswith(f"Unknown resource {uri[:200]!r}… (5,004 characters).") and len(message) < 300


def test_an_unknown_task_id_of_any_size_is_named_cut_with_its_length() -> None:
    message = str(TaskNotFound("y" * 5000))
    assert message.startswith(f"No task {'y' * 64!r}… (5,000 characters):") and len(message) < 300
    assert str(TaskNotFound("short")).startswith("No task 'short': it never existed")
