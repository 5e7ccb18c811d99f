"""`python -m testbed.interop` (`make interop`): build every family's member."""

from testbed.interop import main

main()
