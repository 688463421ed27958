// The portrait speaks. Where the avatar has a face (its landmarks in the canvas's data-face:
// pixels of the image, see service/domain/faces.py) the canvas draws the portrait itself and
// animates it: the mouth opens with the visemes of the avatar's voice, the eyes blink at
// random intervals, and the head sways slightly. Without a face a ring around the portrait
// opens and closes instead. The viseme is read from the audio clock on every animation frame,
// so what is drawn is the shape of the sound being heard (within one frame). How open and how
// wide each viseme is, and how big the opening is drawn (`opening`: its width at `wide` 0 and 1,
// its height fully open, the lips' thickness, all in mouth widths), come from the server's one
// mouth model (service/domain/visemes.py), in the page's data-mouth and data-opening. With prefers-reduced-motion the head keeps still and the eyes do not
// blink; the mouth still speaks.
// window.avatarFace exposes what was last drawn, for tests: { mode ("face" | "ring"), clock,
// viseme, open, wide, frames, blinks, head: {dx, dy, angle}, mouthBox (the mouth's region in
// page pixels, face mode), timeline() }.
"use strict";

window.AvatarFace = (function () {
  const REST = [0, 0.5];
  // The portrait is drawn a little larger than its frame, so the sway never shows an edge.
  const ZOOM = 1.05;
  // The sway: at most this part of the frame's side, and this angle (radians, about 0.7 deg).
  const SWAY = 0.008;
  const TILT = 0.012;
  // A blink lasts BLINK_S; the next one comes 2 to 6 s later.
  const BLINK_S = 0.16;

  // A small seeded generator (mulberry32): each page blinks in its own rhythm.
  function random(seed) {
    let state = seed >>> 0;
    return function () {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function seedOf(text) {
    let hash = 2166136261;
    for (let i = 0; i < text.length; i += 1) {
      hash = Math.imul(hash ^ text.charCodeAt(i), 16777619);
    }
    return hash >>> 0;
  }

  // The average colour of a small square of the image around (x, y), as an rgb() string
  // (`fallback` if the image cannot be read).
  function colourAt(image, x, y, side, fallback) {
    const probe = document.createElement("canvas");
    probe.width = probe.height = 1;
    const pen = probe.getContext("2d", { willReadFrequently: true });
    pen.imageSmoothingQuality = "high";
    try {
      pen.drawImage(image, x - side / 2, y - side / 2, side, side, 0, 0, 1, 1);
      const [r, g, b] = pen.getImageData(0, 0, 1, 1).data;
      return `rgb(${r}, ${g}, ${b})`;
    } catch {
      return fallback;
    }
  }

  function shade(rgb, factor) {
    const [r, g, b] = rgb.match(/\d+/g).map(Number);
    const f = (v) => Math.round(Math.min(255, v * factor));
    return `rgb(${f(r)}, ${f(g)}, ${f(b)})`;
  }

  function fit(canvas) {
    const ratio = window.devicePixelRatio || 1;
    const width = Math.round(canvas.clientWidth * ratio);
    const height = Math.round(canvas.clientHeight * ratio);
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
    }
    return ratio;
  }

  function ring(canvas, pen, open, accent) {
    const size = Math.min(canvas.width, canvas.height);
    pen.clearRect(0, 0, canvas.width, canvas.height);
    if (open > 0) {
      const thickness = size * (0.02 + 0.06 * open);
      pen.globalAlpha = 0.35 + 0.6 * open;
      pen.strokeStyle = accent;
      pen.lineWidth = thickness;
      pen.beginPath();
      pen.arc(canvas.width / 2, canvas.height / 2, size / 2 - thickness / 2, 0, 2 * Math.PI);
      pen.stroke();
      pen.globalAlpha = 1;
    }
  }

  // The portrait with its face: colours read once from the image, then drawn each frame.
  function portrait(image, face, still, opening) {
    const [lx, ly] = face.left_eye;
    const [rx, ry] = face.right_eye;
    const [mx, my] = face.mouth;
    const cheekY = (ly + ry) / 2 + ((my - (ly + ry) / 2) * 0.45);
    const skin = colourAt(image, (lx + rx) / 2, cheekY, face.eye_width * 0.5, "rgb(224, 178, 150)");
    const below = my + face.mouth_width * 0.12;
    const lips = shade(colourAt(image, mx, below, face.mouth_width * 0.2, "rgb(190, 90, 96)"), 0.8);
    const next = random(seedOf(location.pathname));
    let blinkAt = null; // the first blink comes 1 to 4 s after the first frame
    let blinks = 0;

    // How closed the eyes are at time t (s): 0 open .. 1 shut.
    function closure(t) {
      if (still) {
        return 0;
      }
      if (blinkAt === null) {
        blinkAt = t + 1 + 3 * next();
      }
      if (t >= blinkAt + BLINK_S) {
        blinkAt = t + 2 + 4 * next();
        blinks += 1;
      }
      const into = (t - blinkAt) / BLINK_S;
      return into < 0 || into > 1 ? 0 : 1 - Math.abs(2 * into - 1);
    }

    function sway(t, side) {
      if (still) {
        return { dx: 0, dy: 0, angle: 0 };
      }
      const turn = 2 * Math.PI * t;
      return {
        dx: SWAY * side * Math.sin(turn / 5.3),
        dy: SWAY * 0.6 * side * Math.sin(turn / 7.1 + 1),
        angle: TILT * Math.sin(turn / 6.7 + 2),
      };
    }

    function eyelids(pen, shut) {
      if (shut <= 0) {
        return;
      }
      for (const [x, y] of [face.left_eye, face.right_eye]) {
        const rx = face.eye_width * 0.62;
        pen.fillStyle = skin;
        pen.beginPath();
        pen.ellipse(x, y, rx, face.eye_width * 0.42 * shut + 0.5, 0, 0, 2 * Math.PI);
        pen.fill();
        if (shut > 0.6) {
          pen.strokeStyle = shade(skin, 0.45);
          pen.lineWidth = Math.max(1, face.eye_width * 0.06);
          pen.beginPath();
          pen.ellipse(x, y, rx * 0.9, face.eye_width * 0.1, 0, 0, Math.PI);
          pen.stroke();
        }
      }
    }

    function lipsOpen(pen, open, wide) {
      if (open <= 0) {
        return; // closed: the portrait's own lips
      }
      const broadening = (opening.broad - opening.narrow) * wide;
      const width = face.mouth_width * (opening.narrow + broadening);
      const height = face.mouth_width * opening.tall * open;
      const lip = face.mouth_width * opening.lip;
      pen.fillStyle = lips;
      pen.beginPath();
      pen.ellipse(mx, my, width / 2 + lip, height / 2 + lip, 0, 0, 2 * Math.PI);
      pen.fill();
      pen.save();
      pen.beginPath();
      pen.ellipse(mx, my, width / 2, height / 2, 0, 0, 2 * Math.PI);
      pen.fillStyle = "rgb(52, 14, 20)";
      pen.fill();
      pen.clip();
      pen.fillStyle = "rgb(238, 234, 226)"; // the upper teeth
      pen.fillRect(mx - width / 2, my - height / 2, width, Math.min(height * 0.3, lip * 3));
      pen.restore();
    }

    return {
      blinks: () => blinks,
      // Draws the frame; answers the head's sway and the transform from image pixels.
      draw(canvas, pen, t, open, wide) {
        const { width, height } = canvas;
        const scale = Math.max(width / image.naturalWidth, height / image.naturalHeight) * ZOOM;
        const head = sway(t, Math.min(width, height));
        const cx = face.left + face.width / 2;
        const cy = face.top + face.height / 2;
        pen.setTransform(1, 0, 0, 1, 0, 0);
        pen.clearRect(0, 0, width, height);
        // Image pixels -> canvas: cover the frame, then turn and shift about the face's centre.
        const [iw, ih] = [image.naturalWidth, image.naturalHeight];
        pen.translate((width - iw * scale) / 2, (height - ih * scale) / 2);
        pen.scale(scale, scale);
        pen.translate(cx + head.dx / scale, cy + head.dy / scale);
        pen.rotate(head.angle);
        pen.translate(-cx, -cy);
        pen.drawImage(image, 0, 0);
        eyelids(pen, closure(t));
        lipsOpen(pen, open, wide);
        const transform = pen.getTransform();
        pen.setTransform(1, 0, 0, 1, 0, 0);
        return { head, transform };
      },
    };
  }

  function attach(canvas, voice, mouth, opening) {
    const pen = canvas.getContext("2d");
    const hook = {
      mode: "ring",
      clock: 0,
      viseme: "sil",
      open: 0,
      wide: REST[1],
      frames: 0,
      blinks: 0,
      head: { dx: 0, dy: 0, angle: 0 },
      mouthBox: null,
      timeline: () => voice.timeline(),
    };
    window.avatarFace = hook;
    const accent = getComputedStyle(canvas).getPropertyValue("--accent").trim() || "#3b82f6";
    const image = canvas.parentElement.querySelector("img");
    const face = canvas.dataset.face ? JSON.parse(canvas.dataset.face) : null;
    const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    let animated = null;

    function start() {
      if (face && image && image.naturalWidth > 0) {
        animated = portrait(image, face, still, opening);
        canvas.parentElement.classList.add("animated"); // the canvas shows the portrait now
        hook.mode = "face";
      }
    }

    function mouthBox(transform, ratio) {
      const [mx, my] = face.mouth;
      const centre = transform.transformPoint(new DOMPoint(mx, my));
      const side = face.mouth_width * opening.broad * 1.3 * Math.hypot(transform.a, transform.b);
      const frame = canvas.getBoundingClientRect();
      return {
        x: frame.left + (centre.x - side / 2) / ratio,
        y: frame.top + (centre.y - side / 2) / ratio,
        width: side / ratio,
        height: side / ratio,
      };
    }

    function draw(now) {
      const clock = voice.now();
      const viseme = voice.visemeAt(clock);
      const [open, wide] = mouth[viseme] || REST;
      const ratio = fit(canvas);
      if (animated) {
        const { head, transform } = animated.draw(canvas, pen, now / 1000, open, wide);
        hook.head = head;
        hook.blinks = animated.blinks();
        hook.mouthBox = mouthBox(transform, ratio);
      } else {
        ring(canvas, pen, open, accent);
      }
      Object.assign(hook, { clock, viseme, open, wide });
      hook.frames += 1;
      window.requestAnimationFrame(draw);
    }

    if (image && !image.complete) {
      image.addEventListener("load", start, { once: true });
    } else {
      start();
    }
    window.requestAnimationFrame(draw);
  }

  return { attach };
})();
