"""asyncio glue for ``await upload``: the native side schedules
``resolve`` on the awaiting loop once the upload has ended."""


def resolve(future, upload):
    """Completes ``future`` from ``upload``'s outcome, unless it was cancelled."""
    if future.done():
        return
    try:
        future.set_result(upload.result(0))
    except BaseException as e:  # the upload's own exception, for the awaiter
        future.set_exception(e)
