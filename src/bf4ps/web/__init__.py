"""The website and JSON API (create_app in bf4ps.web.app)."""
