from uniret.cli import main

raise SystemExit(main())
