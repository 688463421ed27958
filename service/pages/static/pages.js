// The conversation page of a route or a session: the transcript, the composer and the state
// line, driven by the socket's frames (live.js); the avatar's voice, the microphone (speech.js)
// and the speaking portrait (face.js).
// Every text from the conversation goes in with textContent, never as HTML.
"use strict";

(function () {
  const root = document.querySelector(".chat[data-socket]");
  if (!root) {
    return;
  }
  const ENDINGS = {
    revoked: "The link to this conversation was revoked.",
    expired: "The link to this conversation has expired.",
    session_api: "The session was stopped.",
    session_idle: "The session stopped after being idle for too long.",
    session_max_duration: "The session reached its maximum duration.",
    session_error: "The session stopped because of an error.",
    session_stopped: "The session has stopped.",
    link_gone: "This link is no longer active.",
    link_unknown: "This link does not exist.",
    idle: "The conversation ended after a long silence.",
    too_many_sockets: "Too many conversations are open from your network; close one and reload.",
    route_full: "Too many people are talking on this link right now; try again later.",
    frame_too_large: "The page sent more than a conversation takes at once.",
  };
  const maxChars = Number(root.dataset.maxChars);
  const byId = (id) => document.getElementById(id);
  const ui = {
    state: byId("state"),
    transcript: byId("transcript"),
    ended: byId("ended"),
    form: byId("composer"),
    input: byId("message"),
    send: byId("send"),
    count: byId("count"),
    limit: byId("limit"),
  };
  const framed = window.self !== window.top;
  // Focus moves only where it cannot hurt: not into a page framed by another site that has
  // the visitor's attention, nor into the box on a touch screen (that opens the keyboard).
  const mayFocus = () => !framed || document.hasFocus();
  const mayFocusInput = () => mayFocus() && window.matchMedia("(pointer: fine)").matches;
  let ready = false;

  // The state line and what the composer allows in each state.

  function showState(name, text) {
    ui.state.dataset.state = name;
    ui.state.querySelector(".state-text").textContent = text;
    document.body.dataset.state = name;
    ready = name === "ready";
    checkDraft();
  }

  function showEnded(reason) {
    showState("ended", "Ended");
    finishStreaming();
    microphone.stop();
    voice.stop();
    ui.input.disabled = true;
    byId("mic").disabled = true;
    byId("ended-reason").textContent = ENDINGS[reason] || "The conversation is over.";
    ui.ended.hidden = false;
    if (mayFocus()) {
      ui.ended.focus();
    }
  }

  // The transcript.

  function nearBottom() {
    const box = ui.transcript;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  }

  function append(element) {
    const follow = nearBottom();
    ui.transcript.append(element);
    if (follow) {
      ui.transcript.scrollTop = ui.transcript.scrollHeight;
    }
    return element;
  }

  function addMessage(role, text, id) {
    const message = document.createElement("p");
    message.className = "message " + role;
    message.textContent = text;
    if (id) {
      message.dataset.id = id;
    }
    return append(message);
  }

  function addNote(text, kind) {
    const note = document.createElement("p");
    note.className = "note " + kind;
    note.textContent = text;
    return append(note);
  }

  function assistantMessage(id) {
    const existing = Array.from(ui.transcript.querySelectorAll(".message.assistant")).find(
      (message) => message.dataset.id === id,
    );
    return existing || addMessage("assistant", "", id);
  }

  // A reply streams into its message, which screen readers announce once it is complete.
  function appendDelta(id, text) {
    const follow = nearBottom();
    const message = assistantMessage(id);
    message.classList.add("streaming");
    message.setAttribute("aria-busy", "true");
    message.textContent += text;
    if (follow) {
      ui.transcript.scrollTop = ui.transcript.scrollHeight;
    }
  }

  function completeMessage(id, text) {
    const message = assistantMessage(id);
    message.textContent = text;
    message.classList.remove("streaming");
    message.removeAttribute("aria-busy");
  }

  function finishStreaming() {
    for (const message of ui.transcript.querySelectorAll(".streaming")) {
      message.classList.remove("streaming");
      message.removeAttribute("aria-busy");
    }
  }

  // The composer: Enter sends, Shift+Enter starts a new line; the length rule is the server's.

  function draft() {
    return ui.input.value.trim();
  }

  function checkDraft() {
    const length = Array.from(draft()).length; // code points, as the server counts
    const tooLong = length > maxChars;
    ui.count.textContent = length.toLocaleString("en") + " / " + maxChars.toLocaleString("en");
    ui.count.classList.toggle("over", tooLong);
    ui.limit.hidden = !tooLong;
    ui.input.setAttribute("aria-invalid", String(tooLong));
    ui.send.disabled = !ready || tooLong || length === 0;
    return !ui.send.disabled;
  }

  function sendDraft() {
    if (!checkDraft()) {
      return;
    }
    const text = draft();
    if (connection.send({ type: "message", text })) {
      addMessage("user", text);
      ui.input.value = "";
      checkDraft();
    }
  }

  ui.input.addEventListener("input", checkDraft);
  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendDraft();
    }
  });
  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    sendDraft();
    ui.input.focus();
  });

  // Speech: the avatar's voice plays and moves the portrait; the microphone's audio goes to
  // the server, which answers with what it heard (shown as the visitor's message) and a reply.

  const voice = window.AvatarSpeech.voice(byId("sound"));
  const opening = JSON.parse(root.dataset.opening);
  window.AvatarFace.attach(byId("face"), voice, JSON.parse(root.dataset.mouth), opening);
  const microphone = window.AvatarSpeech.microphone(byId("mic"), {
    start() {
      voice.stop(); // the avatar must not be heard as the visitor
      connection.send({ type: "listen", sample_rate: 16000 });
    },
    chunk(buffer) {
      connection.sendBytes(buffer);
    },
    end() {
      connection.send({ type: "listen_end" });
    },
    problem(message) {
      addNote(message, "error");
    },
  });

  // The socket.

  const connection = window.AvatarLive.connect(
    { socket: root.dataset.socket, link: root.dataset.link },
    {
      frame(frame) {
        if (frame.type === "state") {
          showState(frame.state, frame.state === "ready" ? "Ready" : "Connecting…");
          if (ready && mayFocusInput()) {
            ui.input.focus();
          }
        } else if (frame.type === "delta") {
          appendDelta(frame.id, frame.text);
        } else if (frame.type === "message") {
          completeMessage(frame.id, frame.text);
        } else if (frame.type === "speech") {
          voice.header(frame);
        } else if (frame.type === "transcript") {
          if (frame.text) {
            addMessage("user", frame.text);
          }
        } else if (frame.type === "error") {
          finishStreaming(); // a reply that failed half-way ends here
          addNote(frame.message, "error");
        }
      },
      binary(buffer) {
        voice.pcm(buffer);
      },
      dropped() {
        finishStreaming();
        microphone.cancel();
        voice.stop();
        showState("connecting", "Reconnecting…");
      },
      reconnected() {
        addNote("The connection was lost. This is a new conversation.", "info");
      },
      ended: showEnded,
    },
  );
  ui.input.disabled = false;
  checkDraft();
})();
