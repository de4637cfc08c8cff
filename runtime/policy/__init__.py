"""The engines the gates consult, and the session they read.

One module per question a gate asks: :mod:`.arguments` (do the arguments fit
the advertised schema), :mod:`.capabilities` (is a capability granted),
:mod:`.env` (what environment a command sees), :mod:`.workspace` (may a path
be touched, and which real file is it), :mod:`.taint` (what a session has
read, for the data-flow gate), :mod:`.approval` (asking a person);
:mod:`.session` is one agent in one stage of a prepared plan, with its
workspace, flags and the state these engines keep. The gates themselves are
in :mod:`charter.runtime.gates`. Nothing is imported here.
"""
