"""Trust: a repository's config runs nothing and widens nothing until the user said yes.

requests.py says what a repository's config asks for (what will run, what is widened), grants.py
keeps the user's answers in the user's own folder, consent.py is the one rule every front end's
run goes through (run/prepare.py). See docs/security.md.
"""
