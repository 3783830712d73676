// The console's shared client script: the copy button of a new key. No data is ever put in HTML.
"use strict";
document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
  if (!button) return;
  const input = document.getElementById(button.getAttribute("data-copy"));
  const status = button.parentElement.querySelector(".copied");
  const done = (ok) => {
    if (status) status.textContent = ok ? "Copied." : "Select the key and copy it (Ctrl+C).";
  };
  const fallback = () => {
    input.focus();
    input.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    done(ok);
  };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(input.value).then(() => done(true), fallback);
  else fallback();
});
