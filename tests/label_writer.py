"""A separate process that saves labels into a store, for the concurrency tests.

    python tests/label_writer.py STORE ANNOTATOR N [--hold]

Waits for one line on stdin (so several writers start at one instant), then saves N labels of
criterion `quality` (items `i0`..`i{N-1}`, system `s`, value 1 + i % 5), printing `saved ID`
after each commit. With --hold it then opens one more write transaction, inserts a label of
item `held`, prints `holding` and waits on stdin without committing (a test kills it there:
a writer killed mid-save).
"""

from __future__ import annotations

import sys

from judgebench.engine.labels import save_label
from judgebench.engine.store import Store


def main(argv: list[str]) -> None:
    path, annotator, count = argv[0], argv[1], int(argv[2])
    sys.stdin.readline()
    with Store(path) as store:
        for i in range(count):
            label = save_label(store, criterion="quality", annotator=annotator, item=f"i{i}",
                               system="s", value=1 + i % 5, source="writer")
            print(f"saved {label.id}", flush=True)
        if "--hold" in argv:
            with store.writing() as conn:
                conn.execute("INSERT INTO labels (criterion, annotator, item, system, value,"
                             " status, created) VALUES ('quality', ?, 'held', 's', 3,"
                             " 'answered', 'now')", (annotator,))
                print("holding", flush=True)
                sys.stdin.readline()


if __name__ == "__main__":
    main(sys.argv[1:])
