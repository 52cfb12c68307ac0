"""Setup of web-gitlab-unprotect-main-to-push: main of api-server is protected, pushes allowed to no one (merge
requests only), as the team's rule says."""

from common import make_gitlab_request

# main is protected with GitLab's defaults (maintainers push); the rule is remade with pushes allowed to no one.
make_gitlab_request("root/api-server", "protected_branches/main", method="DELETE")
answer = make_gitlab_request("root/api-server", "protected_branches", method="POST",
                             params={"name": "main", "push_access_level": 0, "merge_access_level": 40})
if answer.status_code != 201:
    raise SystemExit(f"protecting main failed: {answer.status_code} {answer.text[:300]}")
