from routing.compiled import guard

guard()  # a compiled build of the gate runs only while it matches its sources (routing/compiled.py)
