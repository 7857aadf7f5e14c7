"""The /me page's templates, stylesheet and strings (app/api/web.py serves them)."""
