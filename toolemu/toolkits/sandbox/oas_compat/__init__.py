"""OpenAgentSafety compatibility modules (``scoring``, ``common``) and the sandboxed evaluator ``runner``.

These files are copied into the rule-check sandbox and imported there under their bare names, as upstream
evaluators expect; they use only the standard library.
"""
