"""Repository-level pytest settings: files that look like modules but are data, not tests."""

# Case check scripts, OpenAgentSafety evaluators and their compatibility modules import `scoring`/`common`
# as top-level names that only exist inside the evaluator sandbox.
collect_ignore_glob = ["toolemu/testcases/data/*", "toolemu/toolkits/sandbox/oas_compat/*", "tests/fixtures/*"]

# `pytester` runs inner pytest sessions (the --record-llm test); plugins are declared in the root conftest.
pytest_plugins = ["pytester"]
