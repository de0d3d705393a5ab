"""Evaluation harness for ingero's MCP server.

Cases (``evals/cases/*.toml``) name a trace database, an engineer's question,
the facts a correct answer must contain and the claims it must not make.
Tool mode checks that the MCP tool outputs carry those facts; model mode lets
a real language model investigate through the same tools and grades its
answer against the same facts.
"""
