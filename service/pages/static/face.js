// The portrait speaks: a ring around it opens and closes with the mouth shapes (visemes) of the
// avatar's voice, read from the audio clock on every animation frame, so what is drawn is the
// shape of the sound being heard (within one frame). The mouth model (how open each viseme is)
// comes from the server's one table (service/domain/visemes.py), in the page's data-mouth.
// window.avatarFace exposes what was last drawn, for tests: { clock, viseme, open, frames,
// timeline() }.
"use strict";

window.AvatarFace = (function () {
  const REST = [0, 0.5];

  function attach(canvas, voice, mouth) {
    const pen = canvas.getContext("2d");
    const hook = { clock: 0, viseme: "sil", open: 0, frames: 0, timeline: () => voice.timeline() };
    window.avatarFace = hook;
    const accent = getComputedStyle(canvas).getPropertyValue("--accent").trim() || "#3b82f6";

    function fit() {
      const ratio = window.devicePixelRatio || 1;
      const width = Math.round(canvas.clientWidth * ratio);
      const height = Math.round(canvas.clientHeight * ratio);
      if (canvas.width !== width || canvas.height !== height) {
        canvas.width = width;
        canvas.height = height;
      }
      return Math.min(width, height);
    }

    function draw() {
      const clock = voice.now();
      const viseme = voice.visemeAt(clock);
      const [open] = mouth[viseme] || REST;
      hook.clock = clock;
      hook.viseme = viseme;
      hook.open = open;
      hook.frames += 1;
      const size = fit();
      pen.clearRect(0, 0, canvas.width, canvas.height);
      if (open > 0) {
        const thickness = size * (0.02 + 0.06 * open);
        pen.globalAlpha = 0.35 + 0.6 * open;
        pen.strokeStyle = accent;
        pen.lineWidth = thickness;
        pen.beginPath();
        pen.arc(canvas.width / 2, canvas.height / 2, size / 2 - thickness / 2, 0, 2 * Math.PI);
        pen.stroke();
      }
      window.requestAnimationFrame(draw);
    }

    window.requestAnimationFrame(draw);
  }

  return { attach };
})();
