"""Response bodies of the GitLab REST v4 and Jira REST v2 endpoints `forge.py` serves, in the shapes the public
API documentation gives for them (fields the tools ignore included: that is what real servers send)."""

from typing import Any

PROJECT = "acme/shop"
PROJECT_ID = 42
WEB = "http://gitlab.test"
USER = {
    "id": 7,
    "username": "ada",
    "name": "Ada Lovelace",
    "state": "active",
    "avatar_url": None,
    "web_url": f"{WEB}/ada",
}
DIFF_REFS = {"base_sha": "1a2b3c4d" * 5, "head_sha": "9f8e7d6c" * 5, "start_sha": "1a2b3c4d" * 5}
STAMP = "2026-11-20T09:30:00.000Z"


def merge_request(
    iid: int, title: str, source: str, target: str, description: str = "", draft: bool = False
) -> dict[str, Any]:
    """GET /projects/:id/merge_requests/:iid (GitLab docs: "Get single MR"), the fields it documents."""
    return {
        "id": 1000 + iid,
        "iid": iid,
        "project_id": PROJECT_ID,
        "title": title,
        "description": description,
        "state": "opened",
        "created_at": STAMP,
        "updated_at": STAMP,
        "merged_by": None,
        "merged_at": None,
        "closed_by": None,
        "closed_at": None,
        "target_branch": target,
        "source_branch": source,
        "user_notes_count": 1,
        "upvotes": 0,
        "downvotes": 0,
        "author": USER,
        "assignees": [],
        "reviewers": [],
        "source_project_id": PROJECT_ID,
        "target_project_id": PROJECT_ID,
        "labels": [],
        "draft": draft,
        "work_in_progress": draft,
        "milestone": None,
        "merge_when_pipeline_succeeds": False,
        "merge_status": "can_be_merged",
        "detailed_merge_status": "mergeable",
        "sha": DIFF_REFS["head_sha"],
        "merge_commit_sha": None,
        "squash_commit_sha": None,
        "user": {"can_merge": True},
        "discussion_locked": None,
        "should_remove_source_branch": None,
        "force_remove_source_branch": True,
        "web_url": f"{WEB}/{PROJECT}/-/merge_requests/{iid}",
        "references": {"short": f"!{iid}", "relative": f"!{iid}", "full": f"{PROJECT}!{iid}"},
        "time_stats": {"time_estimate": 0, "total_time_spent": 0},
        "squash": False,
        "task_completion_status": {"count": 0, "completed_count": 0},
        "has_conflicts": False,
        "blocking_discussions_resolved": True,
        "changes_count": "3",
        "diff_refs": DIFF_REFS,
    }


DIFFS = [
    {
        "old_path": "shop/cart.py",
        "new_path": "shop/cart.py",
        "a_mode": "100644",
        "b_mode": "100644",
        "diff": "@@ -10,3 +10,5 @@ def total(items):\n-    return sum(i.price for i in items)\n"
        "+    subtotal = sum(i.price * i.qty for i in items)\n+    return round(subtotal, 2)\n",
        "new_file": False,
        "renamed_file": False,
        "deleted_file": False,
        "generated_file": False,
    },
    {
        "old_path": "tests/test_cart.py",
        "new_path": "tests/test_cart.py",
        "a_mode": "0",
        "b_mode": "100644",
        "diff": "@@ -0,0 +1,4 @@\n+from shop.cart import total\n+\n"
        "+def test_total_counts_quantities():\n+    assert total([]) == 0\n",
        "new_file": True,
        "renamed_file": False,
        "deleted_file": False,
        "generated_file": False,
    },
    {
        "old_path": "shop/legacy.py",
        "new_path": "shop/legacy.py",
        "a_mode": "100644",
        "b_mode": "0",
        "diff": "@@ -1,2 +0,0 @@\n-def old_total(items):\n-    return 0\n",
        "new_file": False,
        "renamed_file": False,
        "deleted_file": True,
        "generated_file": False,
    },
]


def note(note_id: int, body: str, *, system: bool = False, iid: int = 0) -> dict[str, Any]:
    """A merge request note (GitLab docs: Notes API)."""
    return {
        "id": note_id,
        "type": "DiffNote" if not system else None,
        "body": body,
        "attachment": None,
        "author": USER,
        "created_at": STAMP,
        "updated_at": STAMP,
        "system": system,
        "noteable_id": 1000 + iid,
        "noteable_type": "MergeRequest",
        "noteable_iid": iid,
        "resolvable": not system,
        "resolved": False,
        "confidential": False,
        "internal": False,
    }


DISCUSSIONS = [
    {"id": "6a9c1750b37d513a43987b574953fceb50b03ce7", "individual_note": False, "notes": [note(301, "Rounding?")]},
    {
        "id": "87805b7c09016a7058e91bdbe7b29d1f284a39e6",
        "individual_note": True,
        "notes": [note(302, "added 1 commit", system=True)],
    },
]
PIPELINES = [
    {
        "id": 77,
        "iid": 12,
        "project_id": PROJECT_ID,
        "sha": DIFF_REFS["head_sha"],
        "ref": "refs/merge-requests/5/head",
        "status": "success",
        "source": "merge_request_event",
        "created_at": STAMP,
        "updated_at": STAMP,
        "web_url": f"{WEB}/{PROJECT}/-/pipelines/77",
    }
]
ISSUE_KEY = "SHOP-17"


def jira_issue(base: str, key: str, status: dict[str, str], comments: list[dict[str, Any]]) -> dict[str, Any]:
    """GET /rest/api/2/issue/{key} (Jira Server REST v2 docs), the fields develop_ticket_v1 asks for."""
    return {
        "expand": "renderedFields,names,schema,operations,editmeta,changelog,versionedRepresentations",
        "id": "10017",
        "self": f"{base}/rest/api/2/issue/10017",
        "key": key,
        "fields": {
            "summary": "Cart total ignores quantities",
            "description": "The cart total sums prices only; it must multiply by quantity and round to cents.",
            "status": {
                "self": f"{base}/rest/api/2/status/{status['id']}",
                "description": "",
                "iconUrl": f"{base}/images/icons/statuses/open.png",
                "name": status["name"],
                "id": status["id"],
                "statusCategory": {
                    "self": f"{base}/rest/api/2/statuscategory/2",
                    "id": 2,
                    "key": "new",
                    "colorName": "blue-gray",
                    "name": "To Do",
                },
            },
            "issuetype": {
                "self": f"{base}/rest/api/2/issuetype/1",
                "id": "1",
                "description": "A problem.",
                "iconUrl": f"{base}/images/icons/issuetypes/bug.svg",
                "name": "Bug",
                "subtask": False,
            },
            "priority": {
                "self": f"{base}/rest/api/2/priority/3",
                "iconUrl": f"{base}/images/icons/priorities/major.svg",
                "name": "Major",
                "id": "3",
            },
            "labels": ["cart"],
            "created": "2026-11-19T10:00:00.000+0000",
            "updated": "2026-11-20T09:30:00.000+0000",
            "reporter": {
                "self": f"{base}/rest/api/2/user?username=ada",
                "name": "ada",
                "key": "ada",
                "displayName": "Ada Lovelace",
                "active": True,
            },
            "assignee": None,
            "comment": {
                "comments": comments,
                "maxResults": len(comments),
                "total": len(comments),
                "startAt": 0,
            },
        },
    }


TRANSITIONS: list[dict[str, Any]] = [
    {"id": "11", "name": "To Do", "to": {"id": "10000", "name": "To Do"}},
    {"id": "21", "name": "In Progress", "to": {"id": "3", "name": "In Progress"}},
    {"id": "31", "name": "Done", "to": {"id": "10001", "name": "Done"}},
]


def branch(name: str) -> dict[str, Any]:
    """POST /projects/:id/repository/branches (GitLab docs: "Create repository branch")."""
    commit = {
        "id": DIFF_REFS["base_sha"],
        "short_id": DIFF_REFS["base_sha"][:8],
        "created_at": STAMP,
        "parent_ids": [],
        "title": "Initial commit",
        "message": "Initial commit",
        "author_name": "Ada Lovelace",
        "author_email": "ada@example.test",
        "authored_date": STAMP,
        "committer_name": "Ada Lovelace",
        "committer_email": "ada@example.test",
        "committed_date": STAMP,
        "web_url": f"{WEB}/{PROJECT}/-/commit/{DIFF_REFS['base_sha']}",
    }
    return {
        "name": name,
        "merged": False,
        "protected": False,
        "default": False,
        "developers_can_push": False,
        "developers_can_merge": False,
        "can_push": True,
        "web_url": f"{WEB}/{PROJECT}/-/tree/{name}",
        "commit": commit,
    }


_FIELD_NAMES = {
    "summary": "Summary",
    "description": "Description",
    "status": "Status",
    "issuetype": "Issue Type",
    "priority": "Priority",
    "labels": "Labels",
    "comment": "Comment",
    "created": "Created",
    "updated": "Updated",
    "reporter": "Reporter",
    "assignee": "Assignee",
}
FIELDS = [
    {
        "id": key,
        "key": key,
        "name": name,
        "custom": False,
        "orderable": True,
        "navigable": True,
        "searchable": True,
        "clauseNames": [key],
        "schema": {"type": "string", "system": key},
    }
    for key, name in _FIELD_NAMES.items()
]
"""GET /rest/api/2/field: the system fields the issue carries (no custom fields, so no epic link field)."""
