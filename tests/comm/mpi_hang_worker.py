"""Every rank announces itself, then waits forever in ``wait_forever`` (the launcher's timeout must end the job)."""

import sys
import time


def wait_forever() -> None:
    while True:
        time.sleep(1)


if __name__ == "__main__":
    print("waiting", flush=True)
    sys.stdout.flush()
    wait_forever()
