// The avatar's voice and the visitor's microphone, both over the conversation socket (SPEC 14):
// a reply arrives sentence by sentence as a speech frame (sample rate, viseme timeline) and the
// sentence's 16-bit PCM, played in order with the Web Audio API; the microphone's audio goes to
// the server as 16 kHz 16-bit PCM for its speech to text. Nothing plays before the visitor's
// first gesture, and the browser's own speech services are not used.
"use strict";

window.AvatarSpeech = (function () {
  const SOUND_KEY = "avatar-service.sound";
  const LISTEN_RATE = 16000;
  const CHUNK_SAMPLES = 3200; // 200 ms at 16 kHz: one binary frame
  const MAX_LISTEN_MS = 29500; // the server takes at most 30 s an utterance
  const LEAD_S = 0.03; // a sentence starts this far ahead, so it is never clipped
  const GESTURES = ["pointerdown", "keydown", "touchstart"];

  // Storage may be missing or refused (e.g. an iframe with third-party storage blocked).
  function stored(key) {
    try {
      return window.localStorage.getItem(key);
    } catch (error) {
      return null;
    }
  }

  function store(key, value) {
    try {
      window.localStorage.setItem(key, value);
    } catch (error) {
      // the choice then lasts as long as the page
    }
  }

  // The avatar's voice. Sound is on unless the visitor turned it off (remembered where
  // storage allows); it starts with the first gesture on the page, as browsers require, and
  // speech that arrives before is dropped. Returns { header(frame), pcm(buffer), now(),
  // visemeAt(time), stop() }: `now()` is the audio clock (s) and `visemeAt` the shape the
  // mouth shows at a time of that clock.
  function voice(button) {
    const Context = window.AudioContext || window.webkitAudioContext;
    let on = stored(SOUND_KEY) !== "off";
    let context = null;
    let header = null; // the speech frame whose PCM comes next
    let endAt = 0; // when the last queued sentence ends, on the audio clock
    let playing = []; // [{ source, start, end, visemes }]
    const label = button.querySelector(".sound-text");

    function show() {
      button.setAttribute("aria-pressed", String(on));
      label.textContent = on ? "Sound on" : "Sound off";
    }

    function unlock() {
      if (!context && Context) {
        context = new Context();
      }
      context?.resume();
    }

    function stop() {
      for (const sentence of playing) {
        sentence.source.stop();
      }
      playing = [];
      endAt = 0;
    }

    function play(frame, buffer) {
      const samples = new Int16Array(buffer);
      if (!samples.length) {
        return;
      }
      const audio = context.createBuffer(1, samples.length, frame.sample_rate);
      const channel = audio.getChannelData(0);
      for (let i = 0; i < samples.length; i++) {
        channel[i] = samples[i] / 32768;
      }
      const source = context.createBufferSource();
      source.buffer = audio;
      source.connect(context.destination);
      const start = Math.max(context.currentTime + LEAD_S, endAt);
      source.start(start);
      endAt = start + audio.duration;
      const sentence = { source, start, end: endAt, visemes: frame.visemes };
      playing.push(sentence);
      source.addEventListener("ended", () => {
        playing = playing.filter((other) => other !== sentence);
      });
    }

    if (Context) {
      for (const type of GESTURES) {
        window.addEventListener(type, unlock, { capture: true, passive: true });
      }
      button.addEventListener("click", () => {
        on = !on;
        store(SOUND_KEY, on ? "on" : "off");
        if (!on) {
          stop();
        }
        show();
      });
      button.hidden = false;
      show();
    }

    return {
      header(frame) {
        header = frame;
      },
      pcm(buffer) {
        const frame = header;
        header = null;
        if (frame && on && context && context.state === "running") {
          play(frame, buffer);
        }
      },
      now() {
        return context ? context.currentTime : 0;
      },
      visemeAt(time) {
        const sentence = playing.find((s) => s.start <= time && time < s.end);
        if (!sentence) {
          return "sil";
        }
        const ms = (time - sentence.start) * 1000;
        let shown = "sil";
        for (const [at, name] of sentence.visemes) {
          if (at > ms) {
            break;
          }
          shown = name;
        }
        return shown;
      },
      // The sentences queued or playing: [{ start, end, visemes }] on the audio clock.
      timeline() {
        return playing.map(({ start, end, visemes }) => ({ start, end, visemes }));
      },
      stop,
    };
  }

  // 16-bit PCM at 16 kHz from the microphone's float samples at `rate`: each output sample is
  // the mean of the input samples it spans (a crude low-pass against aliasing). `carry` keeps
  // what a block left over for the next.
  function downsampler(rate) {
    const step = rate / LISTEN_RATE;
    let carry = new Float32Array(0);
    return function (block) {
      const input = new Float32Array(carry.length + block.length);
      input.set(carry);
      input.set(block, carry.length);
      const count = Math.floor(input.length / step);
      const out = new Int16Array(count);
      for (let k = 0; k < count; k++) {
        const from = Math.floor(k * step);
        const to = Math.max(from + 1, Math.floor((k + 1) * step));
        let sum = 0;
        for (let i = from; i < to; i++) {
          sum += input[i];
        }
        const value = Math.max(-1, Math.min(1, sum / (to - from)));
        out[k] = value < 0 ? value * 32768 : value * 32767;
      }
      carry = input.slice(Math.floor(count * step));
      return out;
    };
  }

  // The microphone button: a click starts listening, the next one (or 30 s) ends it and the
  // server answers what it heard. `on.start()`, `on.chunk(arrayBuffer)` and `on.end()` carry
  // the audio; `on.problem(message)` a sentence for the visitor. Returns { stop() }.
  function microphone(button, on) {
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!navigator.mediaDevices?.getUserMedia || !Context) {
      button.hidden = true;
      return { stop() {}, cancel() {} };
    }
    button.hidden = false;
    let listening = null;

    async function start() {
      let stream;
      try {
        stream = await navigator.mediaDevices.getUserMedia({
          audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true },
        });
      } catch (error) {
        on.problem("The microphone is not allowed on this page.");
        return;
      }
      const context = new Context();
      const source = context.createMediaStreamSource(stream);
      // A ScriptProcessor needs no module file (the page's policy admits scripts of its own
      // origin only, and one file per page is simpler); its blocks are 4096 samples.
      const processor = context.createScriptProcessor(4096, 1, 1);
      const down = downsampler(context.sampleRate);
      let pending = [];
      let pendingLength = 0;
      function flush() {
        if (!pendingLength) {
          return;
        }
        const chunk = new Int16Array(pendingLength);
        let at = 0;
        for (const part of pending) {
          chunk.set(part, at);
          at += part.length;
        }
        pending = [];
        pendingLength = 0;
        on.chunk(chunk.buffer);
      }
      processor.addEventListener("audioprocess", (event) => {
        const part = down(event.inputBuffer.getChannelData(0));
        pending.push(part);
        pendingLength += part.length;
        if (pendingLength >= CHUNK_SAMPLES) {
          flush();
        }
      });
      source.connect(processor);
      processor.connect(context.destination); // a processor runs only while connected
      on.start();
      const timer = window.setTimeout(() => stop(), MAX_LISTEN_MS);
      listening = { stream, context, flush, timer };
      button.setAttribute("aria-pressed", "true");
    }

    // End listening: what was heard is sent and answered, unless `send` is false (the socket
    // that would carry it is gone).
    function stop(send = true) {
      if (!listening) {
        return;
      }
      const { stream, context, flush, timer } = listening;
      listening = null;
      window.clearTimeout(timer);
      if (send) {
        flush();
        on.end();
      }
      for (const track of stream.getTracks()) {
        track.stop();
      }
      context.close();
      button.setAttribute("aria-pressed", "false");
    }

    button.addEventListener("click", () => (listening ? stop() : start()));
    return { stop, cancel: () => stop(false) };
  }

  return { voice, microphone };
})();
