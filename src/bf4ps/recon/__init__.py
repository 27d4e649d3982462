"""Reconnaissance of an egress before it joins the fleet (`bf4ps recon`)."""
