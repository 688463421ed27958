// Stands in for the browser's speech services in test_browser.py: recognition "hears" a
// sentence (first as an interim result, then final), and synthesis records what it is asked
// to say in window.spoken.
"use strict";

window.spoken = [];
window.speechSynthesis.speak = (utterance) => window.spoken.push(utterance.text);
class FakeRecognition extends EventTarget {
  start() {
    const said = (text, isFinal) => {
      const result = [{ transcript: text }];
      result.isFinal = isFinal;
      const event = new Event("result");
      event.results = [result];
      this.dispatchEvent(event);
    };
    setTimeout(() => said("hello from", false), 10);
    setTimeout(() => {
      said("hello from the microphone", true);
      this.dispatchEvent(new Event("end"));
    }, 30);
  }
  stop() {}
}
window.SpeechRecognition = FakeRecognition;
