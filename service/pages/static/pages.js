// Session page: poll the public status endpoint until the session is ready (no reload),
// then slowly, to show when it ends. The id in the URL is the credential, so requests send
// no cookies and no referrer.
"use strict";

(function () {
  const state = document.querySelector("[data-status-url]");
  if (!state) {
    return;
  }
  const LABELS = { connecting: "Connecting…", ready: "Ready", ended: "This session has ended." };
  const STATES = { starting: "connecting", ready: "ready", stopped: "ended" };
  const FAST_MS = 1000;
  const SLOW_MS = 5000;
  const MAX_BACKOFF_MS = 15000;
  let backoff = FAST_MS;

  function show(name) {
    if (state.dataset.state === name) {
      return;
    }
    state.dataset.state = name;
    state.querySelector(".state-text").textContent = LABELS[name];
    document.body.dataset.state = name;
  }

  async function fetchState() {
    const response = await fetch(state.dataset.statusUrl, {
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
      headers: { Accept: "application/json" },
    });
    if (response.status === 404) {
      return "ended";
    }
    if (!response.ok) {
      throw new Error("status " + response.status);
    }
    const body = await response.json();
    return STATES[body.data.status];
  }

  async function poll() {
    let delay;
    try {
      const name = await fetchState();
      if (name) {
        show(name);
      }
      backoff = FAST_MS;
      delay = state.dataset.state === "connecting" ? FAST_MS : SLOW_MS;
    } catch (error) {
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      delay = backoff;
    }
    if (state.dataset.state !== "ended") {
      window.setTimeout(poll, delay);
    }
  }

  window.setTimeout(poll, state.dataset.state === "connecting" ? FAST_MS / 2 : SLOW_MS);
})();
