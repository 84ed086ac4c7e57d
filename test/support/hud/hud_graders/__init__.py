"""HUD's graders (text.py and combine.py as HUD ships them; results.py a stand-in without pydantic)."""
