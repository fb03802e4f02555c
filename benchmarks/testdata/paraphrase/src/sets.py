# Equivalence sets used in gold_groups (each is "any of these does this step equally well").
# Built by searching the catalog by name and description (grep), see README.

# MCP: general web search returning a list of results
WEB = ["brave-search__brave_web_search", "brave-search-legacy__brave_web_search", "exa__web_search_exa",
       "tavily__tavily_search", "searxng__searxng_web_search", "perplexity__perplexity_search",
       "firecrawl__firecrawl_search", "brightdata__search_engine", "brightdata__discover"]
# MCP: read one web page (given its URL) as clean text/markdown
READURL = ["exa__web_fetch_exa", "tavily__tavily_extract", "searxng__web_url_read",
           "firecrawl__firecrawl_scrape", "brightdata__scrape_as_markdown", "desktop-commander__read_file"]
# MCP browser automation: same action in any of the browser-driving servers
SCREENSHOT = ["browsermcp__browser_screenshot", "brightdata__scraping_browser_screenshot",
              "chrome-devtools__take_screenshot", "playwright__browser_take_screenshot",
              "playwright-executeautomation__playwright_screenshot", "puppeteer__puppeteer_screenshot"]
SELECT = ["puppeteer__puppeteer_select", "browsermcp__browser_select_option", "playwright__browser_select_option",
          "playwright-executeautomation__playwright_select", "chrome-devtools__fill"]
CONSOLE = ["browsermcp__browser_get_console_logs", "chrome-devtools__list_console_messages",
           "playwright__browser_console_messages", "playwright-executeautomation__playwright_console_logs"]
EVALJS = ["chrome-devtools__evaluate_script", "playwright__browser_evaluate",
          "playwright-executeautomation__playwright_evaluate", "puppeteer__puppeteer_evaluate"]
NAVIGATE = ["browsermcp__browser_navigate", "brightdata__scraping_browser_navigate", "chrome-devtools__navigate_page",
            "playwright__browser_navigate", "playwright-executeautomation__playwright_navigate",
            "puppeteer__puppeteer_navigate"]
CLICK = ["browsermcp__browser_click", "brightdata__scraping_browser_click_ref", "chrome-devtools__click",
         "playwright__browser_click", "playwright-executeautomation__playwright_click", "puppeteer__puppeteer_click"]
TYPE = ["browsermcp__browser_type", "brightdata__scraping_browser_type_ref", "chrome-devtools__fill",
        "chrome-devtools__type_text", "playwright__browser_type", "playwright-executeautomation__playwright_fill",
        "puppeteer__puppeteer_fill"]
HOVER = ["browsermcp__browser_hover", "chrome-devtools__hover", "playwright__browser_hover",
         "playwright-executeautomation__playwright_hover", "puppeteer__puppeteer_hover"]
DRAG = ["playwright-executeautomation__playwright_drag", "playwright__browser_drag", "chrome-devtools__drag"]
UPLOAD = ["chrome-devtools__upload_file", "playwright__browser_file_upload", "playwright-executeautomation__playwright_upload_file"]
# MCP: quick factual question answered from the web: any web search, or a web-grounded answer tool
FACT = WEB + ["perplexity__perplexity_ask"]
# MCP: accessibility-tree snapshot of the current page
SNAPSHOT = ["brightdata__scraping_browser_snapshot", "playwright__browser_snapshot", "browsermcp__browser_snapshot",
            "chrome-devtools__take_snapshot"]
