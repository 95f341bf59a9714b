from twin.cli import main

raise SystemExit(main())
