"""Triage of five log shapes the last sealed split showed as misses: Triton's orderly stop, a
request that failed while the server went on serving, an uncaught C++ exception (`terminate
called ... what(): ...`), a traceback cut off before its exception, and which process printed
the decisive line (read from the carrier prefix before it is stripped).

Every log here is a real excerpt of the corpus's unsealed part (tests/triage_corpus/, sources in
INDEX.tsv); `corpus()` refuses a sealed one.
"""
from __future__ import annotations

from pathlib import Path

from console.servers.triage import classify_file
from console.servers.triage import carriers
from tests.triage_corpus.sealed import is_sealed

CORPUS = Path(__file__).parent / "triage_corpus"
_URLS = {line.split("\t")[0]: line.split("\t")[5]
         for line in (CORPUS / "INDEX.tsv").read_text().splitlines()[1:]}


def corpus(name: str) -> Path:
    assert not is_sealed(_URLS[name]), f"{name} is in a sealed split: tests must not read it"
    return CORPUS / "logs" / name


def test_tritons_drain_after_sigterm_is_an_orderly_stop():
    """Triton prints 'Signal (15) received.' then 'Waiting for in-flight requests to complete.':
    after its endpoints started that is a stop, not a server still ready."""
    verdict = classify_file(corpus("triton-core-324-sigterm-while-model-loading-drain.log"))
    assert (verdict.cls, verdict.state) == ("healthy", "stopped")


def test_tritons_drain_before_ready_is_no_clean_stop():
    """The same drain runs after a model fails at start: with no endpoint started it proves no stop
    that followed serving, so no class is given."""
    verdict = classify_file(corpus("lmdeploy-979-triton-ft-drain-after-config-table.log"))
    assert verdict.cls == "unknown"


def test_a_request_over_the_context_between_answers_is_a_request_error():
    """A real llama-server log: `E srv send_error: ... exceeds the available context size`, then the
    next request is answered; the server went on serving."""
    verdict = classify_file(corpus("llamacpp-gen-request-exceeds-context-between-answers.log"))
    assert (verdict.cls, verdict.state) == ("request-error", "serving")


def test_a_handler_traceback_answered_with_400_is_a_request_error():
    """vLLM logs a JSONDecodeError from serving_chat.py, then the access line answers that request
    with 400: the server was up and answered it, so the failure is the request's, not a crash
    (it was read as a model-load failure from the exception's type)."""
    verdict = classify_file(corpus("instructor-1336-vllm-json-decode-error-400-then-warning.log"))
    assert (verdict.cls, verdict.state) == ("request-error", "serving")


def test_an_uncaught_cpp_exception_is_an_abort_with_its_what_text():
    """'terminate called after throwing an instance of ...' then '  what():  <message>': std::terminate
    aborts the process; the verdict says so and carries the message (it was 'engine-dead')."""
    verdict = classify_file(corpus("llamacpp-13690-terminate-empty-grammar-stack.log"))
    assert verdict.cls == "abort"
    assert "what(): Unexpected empty grammar stack" in verdict.summary


def test_the_what_text_is_kept_when_the_shell_reports_the_abort_too():
    verdict = classify_file(corpus("llamacpp-12939-terminate-hf-api-500-aborted.log"))
    assert verdict.cls == "abort"
    assert "error from HF API, response code: 500" in verdict.summary


def test_a_what_text_that_means_out_of_memory_is_oom():
    """The first root cause, not the last consequence: the what() message names the cause."""
    verdict = classify_file(corpus("lmdeploy-2236-terminate-tm-cuda-runtime-oom.log"))
    assert verdict.cls == "oom"


def test_a_traceback_cut_before_its_exception_is_unknown_pointing_at_its_last_frame():
    """LMDeploy's AsyncEngine traceback stops in its frames: what was raised is not in the log, so
    no class is named (it was python-exception at the threshold), and the first suspicious line is
    the frame where it stops."""
    verdict = classify_file(corpus("lmdeploy-1375-qwenvl-asyncengine-traceback-truncated.log"))
    assert verdict.cls == "unknown"
    assert verdict.decided_by == "cut-traceback"
    first = verdict.suspicious[0]
    assert "cut off here" in first["why"] and 'File "' in first["text"]


def test_a_death_notice_above_a_cut_traceback_names_the_frame_it_stops_in():
    verdict = classify_file(corpus("vllm-34643-workerproc-hit-an-exception-sample-tokens.log"))
    assert verdict.cls == "engine-dead"
    assert "its traceback is cut off in" in verdict.summary


def test_the_process_that_printed_the_decisive_line_is_kept():
    """vLLM's '(VllmWorker rank=1 pid=12231)' prefix is stripped before rules run; the verdict still
    says which process printed its line."""
    verdict = classify_file(corpus("vllm-15469-v1-worker-exception-capture-model.log"))
    assert verdict.process == "VllmWorker rank=1 pid=12231"
    assert verdict.to_json()["printed_by"] == "VllmWorker rank=1 pid=12231"
    assert "printed by VllmWorker rank=1 pid=12231" in verdict.summary


def test_process_tags_are_read_under_other_carriers_and_stripped_from_the_text():
    journald = "Dec 02 12:10:21 host vllm[24689]: (EngineCore_DP0 pid=65064) ERROR 01-08 11:19:33 [core.py:866] x"
    assert carriers.process_of(journald) == "EngineCore_DP0 pid=65064"
    assert carriers.process_of("[rank3]:[W409 11:42:27.776885251 ProcessGroupNCCL.cpp:1250] Warning") == "rank3"
    assert carriers.process_of("(RayWorkerWrapper pid=376235, ip=10.10.10.61) 14 0x0000") == "RayWorkerWrapper pid=376235"
    assert carriers.process_of("INFO 05-14 17:45:10 [metrics.py:486] Avg prompt throughput") is None
    assert carriers.clean_line(journald).startswith("ERROR 01-08")
