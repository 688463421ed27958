// The browser's own speech services for the conversation page: a microphone button that turns
// the visitor's speech into text (SpeechRecognition, where the browser has it), and a sound
// toggle that reads replies aloud (speechSynthesis). Both stay hidden where unsupported.
"use strict";

window.AvatarSpeech = (function () {
  const Recognition = window.SpeechRecognition || window.webkitSpeechRecognition;
  const SOUND_KEY = "avatar-service.sound";
  // Recognition errors that mean it cannot work here at all (no service, no permission to use
  // one), as opposed to a try that heard nothing.
  const UNAVAILABLE = ["service-not-allowed", "network", "language-not-supported"];

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

  // Wire the microphone button. `on.interim(text)` and `on.final(text)` receive what was heard;
  // `on.problem(message)` a sentence for the visitor. Returns { stop() }.
  function microphone(button, on) {
    let recognition = null;
    if (!Recognition) {
      button.hidden = true;
      return { stop() {} };
    }
    button.hidden = false;

    function heard(event) {
      let text = "";
      let final = false;
      for (const result of Array.from(event.results)) {
        text += result[0].transcript;
        final = final || result.isFinal;
      }
      (final ? on.final : on.interim)(text.trim());
    }

    function failed(event) {
      if (event.error === "not-allowed") {
        on.problem("The microphone is not allowed on this page.");
      } else if (UNAVAILABLE.includes(event.error)) {
        button.hidden = true;
        on.problem("Speech recognition is not available in this browser.");
      }
      // "no-speech" and "aborted" need no word: the visitor can simply try again.
    }

    function start() {
      window.speechSynthesis?.cancel(); // the avatar must not be heard as the visitor
      recognition = new Recognition();
      recognition.lang = document.documentElement.lang || navigator.language;
      recognition.interimResults = true;
      recognition.addEventListener("result", heard);
      recognition.addEventListener("error", failed);
      recognition.addEventListener("end", () => {
        recognition = null;
        button.setAttribute("aria-pressed", "false");
      });
      button.setAttribute("aria-pressed", "true");
      recognition.start();
    }

    function stop() {
      recognition?.stop();
    }

    button.addEventListener("click", () => (recognition ? stop() : start()));
    return { stop };
  }

  // Wire the sound toggle: off unless the visitor turned it on (remembered where storage
  // allows). Returns { speak(text), stop() }.
  function sound(button) {
    const synthesis = window.speechSynthesis;
    if (!synthesis || !window.SpeechSynthesisUtterance) {
      return { speak() {}, stop() {} };
    }
    let on = stored(SOUND_KEY) === "on";
    const label = button.querySelector(".sound-text");

    function show() {
      button.setAttribute("aria-pressed", String(on));
      label.textContent = on ? "Sound on" : "Sound off";
    }

    button.addEventListener("click", () => {
      on = !on;
      store(SOUND_KEY, on ? "on" : "off");
      if (!on) {
        synthesis.cancel();
      }
      show();
    });
    button.hidden = false;
    show();

    return {
      speak(text) {
        if (on && text) {
          synthesis.speak(new window.SpeechSynthesisUtterance(text));
        }
      },
      stop() {
        synthesis.cancel();
      },
    };
  }

  return { microphone, sound };
})();
