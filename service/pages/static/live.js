// The conversation socket of a page. It hands every frame to the page, keeps an idle socket
// alive with pings, and when the socket drops it asks the page's own URL whether the link
// still admits anyone: if so it reconnects, backing off; if not the conversation has ended.
"use strict";

window.AvatarLive = (function () {
  const FIRST_RETRY_MS = 1000;
  const MAX_RETRY_MS = 30000;
  const PING_EVERY_MS = 25000;
  // A ready socket that hears nothing this long is taken for dropped. Longer than the longest
  // silence of a reply (a responder may take 5 s to connect and 30 s to start answering).
  const SILENT_MS = 60000;
  // A conversation ending because the server restarts is not the end of the link.
  const RESTARTING = "server_stopping";

  function socketUrl(path) {
    const url = new URL(path, window.location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    return url.href;
  }

  // "gone" (410), "unknown" (404), "open", or null when it cannot be told (no network).
  async function linkStatus(path) {
    try {
      const response = await fetch(path, {
        method: "HEAD",
        cache: "no-store",
        credentials: "omit",
        referrerPolicy: "no-referrer",
      });
      if (response.status === 410) {
        return "gone";
      }
      if (response.status === 404) {
        return "unknown";
      }
      return response.ok ? "open" : null;
    } catch (error) {
      return null;
    }
  }

  // Open the conversation at `paths.socket`. `page` receives:
  //   frame(frame)      every frame but the `ended` state,
  //   binary(buffer)    a binary frame (the PCM of the speech frame before it),
  //   dropped()         the socket was lost; a new one is on its way,
  //   reconnected()     a new socket is open (a new conversation),
  //   ended(reason)     the conversation is over for good (a frame's reason, or "link_gone",
  //                     "link_unknown" when the link stopped admitting anyone).
  // Returns { send(frame), sendBytes(buffer) -> whether it went out }.
  function connect(paths, page) {
    let socket = null;
    let ready = false;
    let lost = false;
    let retryMs = FIRST_RETRY_MS;
    let retryTimer = null;
    let heardAt = 0;

    function open() {
      retryTimer = null;
      const current = new WebSocket(socketUrl(paths.socket));
      current.binaryType = "arraybuffer";
      socket = current;
      // Events of a socket already given up on are ignored.
      current.addEventListener("open", () => socket === current && lost && page.reconnected());
      current.addEventListener("message", (event) => socket === current && receive(event.data));
      current.addEventListener("close", () => socket === current && drop());
    }

    function receive(data) {
      heardAt = Date.now();
      if (data instanceof ArrayBuffer) {
        page.binary(data);
        return;
      }
      let frame;
      try {
        frame = JSON.parse(data);
      } catch (error) {
        return;
      }
      if (frame.type === "state") {
        ready = frame.state === "ready";
        if (ready) {
          retryMs = FIRST_RETRY_MS;
        }
        if (frame.state === "ended") {
          // A restarting server closes the socket next: that drop reconnects.
          if (frame.reason !== RESTARTING) {
            end(frame.reason);
          }
          return;
        }
      }
      page.frame(frame);
    }

    function end(reason) {
      if (socket) {
        const last = socket;
        socket = null;
        last.close();
      }
      page.ended(reason);
    }

    // Forget the socket (it may never say goodbye on a dead network) and find out what next.
    async function drop() {
      const last = socket;
      socket = null;
      ready = false;
      last.close();
      lost = true;
      page.dropped();
      const status = await linkStatus(paths.link);
      if (status === "gone" || status === "unknown") {
        end("link_" + status);
        return;
      }
      // Half to all of the current back-off, so many pages do not return all at once.
      const delay = retryMs / 2 + (Math.random() * retryMs) / 2;
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      retryTimer = window.setTimeout(open, delay);
    }

    function heartbeat() {
      if (!socket || !ready) {
        return; // a session warming up answers nothing until it is ready
      }
      if (Date.now() - heardAt > SILENT_MS) {
        drop();
      } else {
        send({ type: "ping" });
      }
    }

    function send(frame) {
      return sendBytes(JSON.stringify(frame));
    }

    function sendBytes(data) {
      if (!socket || socket.readyState !== WebSocket.OPEN) {
        return false;
      }
      socket.send(data);
      return true;
    }

    // Back online: no need to wait out the back-off.
    window.addEventListener("online", () => {
      if (retryTimer !== null) {
        window.clearTimeout(retryTimer);
        open();
      }
    });
    window.setInterval(heartbeat, PING_EVERY_MS);
    open();
    return { send, sendBytes };
  }

  return { connect };
})();
